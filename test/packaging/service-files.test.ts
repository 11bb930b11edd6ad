// The systemd unit and the Dockerfile in examples/: the settings the docs promise, and command
// lines the CLI really accepts (run with their arguments, they fail on the missing configuration
// file with exit 1, not on usage with exit 2), among them the container command and arguments of
// Choria's own Helm chart. Docker and systemd themselves do not run here; the image's entrypoint
// runs outside Docker from an installed release in installed-package.network.test.ts.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { splitCommand } from '@choria-provisioner/core/internal';
import { CHORIA_CHART, parseDockerfile } from '@choria-provisioner/test-support/dockerfile';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cliBin = join(root, 'packages/cli/dist/bin.js');
const UPSTREAM_CONFIG_DIR = '/etc/choria-provisioner';

const scratch = mkdtempSync(join(tmpdir(), 'cpts-packaging-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** `[Section]` → key → values (a key may repeat). */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const section = /^\[(.+)\]$/.exec(line);
    if (section !== null) {
      current = new Map();
      sections.set(section[1] as string, current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current === undefined || eq < 1) throw new Error(`unexpected unit line: ${line}`);
    const key = line.slice(0, eq);
    current.set(key, [...(current.get(key) ?? []), line.slice(eq + 1)]);
  }
  return sections;
}

interface CliRun {
  code: number;
  stderr: string;
}

/** Runs `file` with `args`, configuration paths moved from /etc/choria-provisioner into an empty scratch dir. */
async function runWith(file: string, args: readonly string[]): Promise<CliRun> {
  expect(existsSync(cliBin), 'packages/cli/dist/bin.js is missing: run "npm run build" first').toBe(true);
  const moved = args.map((a) =>
    a.split(UPSTREAM_CONFIG_DIR).join(scratch).replace('/run/choria-provisioner/', `${scratch}/`),
  );
  // `node` on PATH is the one running the tests, as in the image
  const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
  return await new Promise((resolve) => {
    execFile(file, moved, { timeout: 15_000, env }, (err, _stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stderr });
    });
  });
}

/** Runs the built CLI with `args`, as {@link runWith} moves them. */
async function runCliWith(args: readonly string[]): Promise<CliRun> {
  return await runWith(process.execPath, [cliBin, ...args]);
}

const UPSTREAM_ARGS = {
  choriaConfig: `${UPSTREAM_CONFIG_DIR}/choria.cfg`,
  dockerChoriaConfig: `${UPSTREAM_CONFIG_DIR}/client.cfg`,
  config: `${UPSTREAM_CONFIG_DIR}/choria-provisioner.yaml`,
};

describe('examples/systemd/choria-provisioner.service', () => {
  const unit = parseUnit(readFileSync(join(root, 'examples/systemd/choria-provisioner.service'), 'utf8'));
  const service = unit.get('Service') ?? new Map<string, string[]>();
  const one = (key: string): string | undefined => service.get(key)?.at(-1);

  it('restarts on failure, runs as the dedicated user and logs to the journal', () => {
    expect(one('Restart')).toBe('on-failure');
    expect(one('User')).toBe('choria-provisioner');
    expect(one('Group')).toBe('choria-provisioner');
    expect(one('StandardOutput')).toBe('journal');
    expect(unit.get('Install')?.get('WantedBy')).toEqual(['multi-user.target']);
  });

  it('has no hardening option that breaks Node.js or helpers that use the network', () => {
    // Node's JIT needs writable and executable memory; helpers talk to CAs and CMDBs.
    for (const key of ['MemoryDenyWriteExecute', 'PrivateNetwork', 'IPAddressDeny'])
      expect(service.has(key), key).toBe(false);
    expect(one('RestrictAddressFamilies')?.split(/\s+/)).toEqual(
      expect.arrayContaining(['AF_INET', 'AF_INET6', 'AF_UNIX']),
    );
    expect(one('NoNewPrivileges')).toBe('yes');
  });

  it('starts the built CLI with the upstream arguments, which the CLI accepts', async () => {
    const exec = splitCommand(one('ExecStart') ?? '');
    expect(exec.slice(0, 3)).toEqual(['/usr/bin/node', '/opt/choria-provisioner/packages/cli/dist/bin.js', 'run']);
    const args = exec.slice(2);
    expect(args).toEqual(
      expect.arrayContaining(['--choria-config', UPSTREAM_ARGS.choriaConfig, `--config=${UPSTREAM_ARGS.config}`]),
    );
    const result = await runCliWith(args);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(`could not load ${scratch}/choria-provisioner.yaml`);
  });
});

describe('examples/docker/Dockerfile', () => {
  const docker = parseDockerfile(readFileSync(join(root, 'examples/docker/Dockerfile'), 'utf8'));
  const { all } = docker;
  const KNOWN = ['FROM', 'WORKDIR', 'COPY', 'RUN', 'USER', 'ENV', 'EXPOSE', 'HEALTHCHECK', 'ENTRYPOINT', 'CMD'];

  it('uses known instructions, a pinned base for both stages and apt-get the way linters ask', () => {
    expect(docker.instructions.filter((l) => !KNOWN.includes(l.split(' ')[0] ?? ''))).toEqual([]);
    // Node.js 24, the LTS line everything else is built, tested and measured on
    expect(all('FROM')).toEqual(['node:24-slim AS install', 'node:24-slim']);
    for (const run of all('RUN').filter((r) => r.includes('apt-get'))) {
      // update and install in one layer, no recommends, the lists removed (hadolint DL3009, DL3015)
      expect(run).toMatch(
        /apt-get update && apt-get install -y --no-install-recommends .* && rm -rf \/var\/lib\/apt\/lists\/\*/,
      );
    }
  });

  it('installs the release tarballs with npm ci --omit=dev, building nothing from sources', () => {
    expect(
      all('RUN')
        .filter((r) => r.startsWith('npm '))
        .map((r) => r.split(' && ')[0]),
    ).toEqual(['npm ci --omit=dev --no-audit --no-fund']);
    expect(docker.instructions.join('\n')).not.toMatch(/npm run build|npm install|tsc|packages\//);
  });

  it('copies only what a release directory holds (scripts/pack-release.mjs)', async () => {
    const release = mkdtempSync(join(tmpdir(), 'cpts-release-'));
    try {
      await promisify(execFile)(process.execPath, [join(root, 'scripts', 'pack-release.mjs'), '--out', release]);
      const present = readdirSync(release);
      const sources = all('COPY')
        .filter((c) => !c.startsWith('--from='))
        .flatMap((c) => c.split(' ').slice(0, -1));
      expect(sources).toEqual(['package.json', 'package-lock.json', '*.tgz']);
      for (const src of sources) {
        const re = new RegExp(`^${src.replace(/\./g, '\\.').replace(/\*/g, '.*')}$`);
        expect(present.filter((f) => re.test(f)).length, `${src} in the release directory`).toBeGreaterThan(0);
      }
      expect(present.filter((f) => f.endsWith('.tgz'))).toHaveLength(3);
    } finally {
      rmSync(release, { recursive: true, force: true });
    }
  });

  it('runs as uid 2048 (not root) in /etc/choria-provisioner, with a health check on the monitor port', () => {
    expect(all('RUN').join(' ')).toMatch(/useradd --uid 2048 --gid 2048/);
    expect(all('USER').at(-1)).toBe('2048:2048');
    expect(all('WORKDIR').at(-1)).toBe(UPSTREAM_CONFIG_DIR);
    const health = docker.execForm('HEALTHCHECK');
    expect(health.slice(0, 2)).toEqual(['node', '-e']);
    expect(health[2]).toContain(`http://127.0.0.1:${all('EXPOSE').at(-1) ?? ''}/healthz`);
  });

  /** Where npm ci in the install stage's WORKDIR puts the CLI's bin. */
  const installedCli = (): string => {
    const cliManifest = JSON.parse(readFileSync(join(root, 'packages/cli/package.json'), 'utf8')) as {
      name: string;
      bin: Record<string, string>;
    };
    const bin = (cliManifest.bin['choria-provisioner'] ?? '').replace(/^\.\//, '');
    return `${all('WORKDIR')[0] ?? ''}/node_modules/${cliManifest.name}/${bin}`;
  };

  /** Runs the image's /usr/sbin/choria-provisioner, the installed CLI in it moved to the checkout's build. */
  async function runCommandWith(args: readonly string[]): Promise<CliRun> {
    const script = docker.writtenFile(CHORIA_CHART.command[0] ?? '');
    expect(script, 'no RUN writes /usr/sbin/choria-provisioner').toBeDefined();
    const wrapper = join(scratch, 'choria-provisioner.sh');
    writeFileSync(wrapper, (script ?? '').split(installedCli()).join(cliBin));
    return await runWith('/bin/sh', [wrapper, ...args]);
  }

  it('provides /usr/sbin/choria-provisioner, which runs the installed CLI with node, under tini as PID 1', () => {
    const writes = all('RUN').filter((r) => r.includes(' > /usr/sbin/choria-provisioner'));
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatch(/ && chmod 0755 \/usr\/sbin\/choria-provisioner$/);
    const lines = (docker.writtenFile('/usr/sbin/choria-provisioner') ?? '').split('\n');
    expect(lines).toEqual([
      '#!/bin/sh',
      `cli=${installedCli()}`,
      'if [ "$$" = 1 ]; then exec /usr/bin/tini -- node "$cli" "$@"; fi',
      'exec node "$cli" "$@"',
      '',
    ]);
    // written in the runtime stage, before the image drops root
    const order = docker.instructions;
    const write = order.findIndex((l) => l.includes(' > /usr/sbin/choria-provisioner'));
    expect(write).toBeGreaterThan(order.findLastIndex((l) => l.startsWith('FROM ')));
    expect(write).toBeLessThan(order.findIndex((l) => l.startsWith('USER ')));
  });

  it('has tini and /usr/sbin/choria-provisioner as entrypoint and the upstream image default arguments', async () => {
    expect(all('RUN').join(' ')).toMatch(/apt-get install -y --no-install-recommends .*\btini\b/);
    expect(docker.execForm('ENTRYPOINT')).toEqual(['/usr/bin/tini', '--', '/usr/sbin/choria-provisioner']);
    const cmd = docker.execForm('CMD');
    expect(cmd).toEqual([
      'run',
      `--config=${UPSTREAM_ARGS.config}`,
      `--choria-config=${UPSTREAM_ARGS.dockerChoriaConfig}`,
    ]);
    const direct = await runCliWith(cmd);
    expect(direct.code, direct.stderr).toBe(1);
    expect(direct.stderr).toContain(`could not load ${scratch}/choria-provisioner.yaml`);
    const result = await runCommandWith(cmd);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(`could not load ${scratch}/choria-provisioner.yaml`);
  });

  it("gives the command, paths and user of Choria's own Helm chart, whose command line the CLI accepts", async () => {
    // the user and group the chart runs as, owning the directory its volumes are mounted under
    expect(all('RUN').join(' ')).toMatch(/groupadd --gid 2048 choria/);
    expect(all('RUN').join(' ')).toMatch(
      /useradd --uid 2048 --gid 2048 .*chown choria:choria \/etc\/choria-provisioner/,
    );
    expect(all('USER').at(-1)).toBe(`${CHORIA_CHART.uid}:${CHORIA_CHART.uid}`);
    // Debian's ruby package is what puts the interpreter of upstream's sample helper at /usr/bin/ruby
    expect(all('RUN').join(' ')).toMatch(/apt-get install -y --no-install-recommends .*\bruby\b/);
    const result = await runCommandWith(CHORIA_CHART.args);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(`could not load ${scratch}/config/choria-provisioner.yaml`);
  });
});

// The systemd unit and the Dockerfile in examples/: the settings the docs promise, and command
// lines the CLI really accepts (run with their arguments, they fail on the missing configuration
// file with exit 1, not on usage with exit 2). Docker and systemd themselves do not run here.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { splitCommand } from '@choria-provisioner/core/internal';

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

/** Runs the built CLI with `args`, configuration paths moved from /etc/choria-provisioner into an empty scratch dir. */
async function runCliWith(args: readonly string[]): Promise<CliRun> {
  expect(existsSync(cliBin), 'packages/cli/dist/bin.js is missing: run "npm run build" first').toBe(true);
  const moved = args.map((a) => a.split(UPSTREAM_CONFIG_DIR).join(scratch).replace('/run/choria-provisioner/', `${scratch}/`));
  return await new Promise((resolve) => {
    execFile(process.execPath, [cliBin, ...moved], { timeout: 15_000 }, (err, _stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
      resolve({ code, stderr });
    });
  });
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
    for (const key of ['MemoryDenyWriteExecute', 'PrivateNetwork', 'IPAddressDeny']) expect(service.has(key), key).toBe(false);
    expect(one('RestrictAddressFamilies')?.split(/\s+/)).toEqual(expect.arrayContaining(['AF_INET', 'AF_INET6', 'AF_UNIX']));
    expect(one('NoNewPrivileges')).toBe('yes');
  });

  it('starts the built CLI with the upstream arguments, which the CLI accepts', async () => {
    const exec = splitCommand(one('ExecStart') ?? '');
    expect(exec.slice(0, 3)).toEqual(['/usr/bin/node', '/opt/choria-provisioner/packages/cli/dist/bin.js', 'run']);
    const args = exec.slice(2);
    expect(args).toEqual(expect.arrayContaining(['--choria-config', UPSTREAM_ARGS.choriaConfig, `--config=${UPSTREAM_ARGS.config}`]));
    const result = await runCliWith(args);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(`could not load ${scratch}/choria-provisioner.yaml`);
  });
});

describe('examples/docker/Dockerfile', () => {
  const text = readFileSync(join(root, 'examples/docker/Dockerfile'), 'utf8');
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  const all = (op: string): string[] => instructions.filter((l) => l.startsWith(`${op} `)).map((l) => l.slice(op.length + 1).trim());
  const jsonArray = (op: string): string[] => {
    const last = all(op).at(-1);
    const parsed: unknown = last === undefined ? undefined : JSON.parse(last);
    if (!Array.isArray(parsed) || !parsed.every((x): x is string => typeof x === 'string')) throw new Error(`${op} is not a JSON list of strings`);
    return parsed;
  };

  it('builds on node:20-slim with npm ci and runs as uid 2048 in /etc/choria-provisioner', () => {
    expect(all('FROM').map((f) => f.split(/\s+/)[0])).toEqual(['node:20-slim', 'node:20-slim']);
    expect(text).toContain('npm ci');
    expect(text).toContain('npm run build');
    expect(text).toMatch(/useradd --uid 2048 --gid 2048/);
    expect(all('USER').at(-1)).toBe('2048:2048');
    expect(all('WORKDIR').at(-1)).toBe(UPSTREAM_CONFIG_DIR);
  });

  it('copies only files that exist in the checkout and are not excluded from the build context', () => {
    const ignored = readFileSync(join(root, 'examples/docker/Dockerfile.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    const sources = all('COPY')
      .filter((c) => !c.startsWith('--from='))
      .flatMap((c) => c.split(/\s+/).slice(0, -1));
    expect(sources.length).toBeGreaterThan(5);
    for (const src of sources) {
      expect(existsSync(join(root, src)), src).toBe(true);
      const excluded = ignored.some((pattern) => {
        const bare = pattern.replace(/^\*\*\//, '');
        return src === bare || src.startsWith(`${bare}/`) || src.split('/').includes(bare);
      });
      expect(excluded, `${src} is excluded by Dockerfile.dockerignore`).toBe(false);
    }
  });

  it('has the CLI as entrypoint and the upstream image default arguments, which the CLI accepts', async () => {
    const entrypoint = jsonArray('ENTRYPOINT');
    expect(entrypoint.slice(-2)).toEqual(['node', '/opt/choria-provisioner/packages/cli/dist/bin.js']);
    const cmd = jsonArray('CMD');
    expect(cmd).toEqual(['run', `--config=${UPSTREAM_ARGS.config}`, `--choria-config=${UPSTREAM_ARGS.dockerChoriaConfig}`]);
    const result = await runCliWith(cmd);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toContain(`could not load ${scratch}/choria-provisioner.yaml`);
  });
});

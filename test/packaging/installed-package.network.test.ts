// What `npx choria-provisioner ...` or `npm install -g choria-provisioner` gives a user once the
// packages are published: the three tarballs of `npm pack`, installed into an empty project (from
// the npm cache, no registry), then the commands the README shows, run from that installation.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDockerfile } from '@choria-provisioner/test-support/dockerfile';
import { freePort, startNatsServer } from '@choria-provisioner/test-support/nats-server';
import { installPacked, type PackedInstall } from '@choria-provisioner/test-support/packed-install';
import { until } from '@choria-provisioner/test-support/wait';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const run = promisify(execFile);

let dir: string;
let install: PackedInstall;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cpts-installed-'));
  install = await installPacked(repoRoot, dir);
  if (!install.ok) process.stderr.write(`installed-package tests skipped: ${install.reason}\n`);
}, 300_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

interface Ran {
  code: number;
  out: string;
}

/** `npx <args>` in the installed project: its node_modules/.bin, never the checkout's. */
async function npx(args: string[], opts: { cwd?: string; timeoutMs?: number } = {}): Promise<Ran> {
  if (!install.ok) throw new Error('not installed');
  try {
    const r = await run('npx', ['--offline', '--no-install', ...args], {
      cwd: opts.cwd ?? install.appDir,
      timeout: opts.timeoutMs ?? 60_000,
      maxBuffer: 32 * 1024 * 1024,
    });
    return { code: 0, out: `${r.stdout}${r.stderr}` };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

describe('the installed packages', () => {
  it('install from the tarballs alone', (ctx) => {
    if (!install.ok) return ctx.skip(install.reason);
    expect(install.tarballs).toEqual([
      'choria-provisioner-0.1.0.tgz',
      'choria-provisioner-core-0.1.0.tgz',
      'choria-provisioner-simulator-0.1.0.tgz',
    ]);
  });

  it('npx choria-provisioner --help lists every command; npx choria-simulator --help answers', async (ctx) => {
    if (!install.ok) return ctx.skip(install.reason);
    const help = await npx(['choria-provisioner', '--help']);
    expect(help.code, help.out).toBe(0);
    for (const c of ['run', 'validate', 'status', 'demo']) expect(help.out).toContain(`choria-provisioner ${c}`);
    const sim = await npx(['choria-simulator', '--help']);
    expect(sim.code, sim.out).toBe(0);
    expect(sim.out).toContain('usage: choria-simulator');
  });

  it('validates an example configuration', async (ctx) => {
    if (!install.ok) return ctx.skip(install.reason);
    // examples/local/ names its helper and Choria config relative to the repository root
    const bin = join(install.appDir, 'node_modules', 'choria-provisioner', 'dist', 'bin.js');
    const r = await run(process.execPath, [bin, 'validate', '--config', 'examples/local/provisioner.yaml'], {
      cwd: repoRoot,
    });
    expect(r.stdout).toContain('examples/local/provisioner.yaml: OK');
  });

  it.for(['plain', 'jwt', 'pki', 'ed25519'])('runs the demo of 50 nodes in %s mode', async (mode, ctx) => {
    if (!install.ok) return ctx.skip(install.reason);
    const r = await npx(['choria-provisioner', 'demo', '--nodes', '50', '--mode', mode], { timeoutMs: 120_000 });
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('OK: all 50 nodes provisioned, no protocol violations.');
    // the helper ran from the installed package, not from a checkout
    expect(r.out).toMatch(/helper (pool-helper|ed25519-helper|x509-ca-helper)\.mjs/);
  });

  it("runs the container image's entrypoint and default arguments outside Docker, and its health check passes", async (ctx) => {
    if (!install.ok) return ctx.skip(install.reason);
    const { appDir } = install;
    const docker = parseDockerfile(readFileSync(join(repoRoot, 'examples/docker/Dockerfile'), 'utf8'));
    // without tini: /usr/sbin/choria-provisioner, as a RUN of the Dockerfile writes it
    const [, , command = ''] = docker.execForm('ENTRYPOINT');
    const script = docker.writtenFile(command);
    expect(script, `no RUN writes ${command}`).toBeDefined();
    const health = docker.execForm('HEALTHCHECK');
    const installRoot = docker.all('WORKDIR')[0] ?? '';
    const configRoot = docker.all('WORKDIR').at(-1) ?? '';
    const imagePort = docker.all('EXPOSE').at(-1) ?? '';
    const broker = await startNatsServer({ jetstream: false });
    const configDir = join(dir, 'etc');
    mkdirSync(configDir, { recursive: true });
    const port = await freePort();
    const helper = join(appDir, 'node_modules', 'choria-provisioner', 'helpers', 'pool-helper.mjs');
    writeFileSync(
      join(configDir, 'choria-provisioner.yaml'),
      `site: image\ntoken: s3cret\nchoria_insecure: true\nworkers: 2\ninterval: 1m\nhelper: ${process.execPath} ${helper}\nhelper_mode: pool\nmonitor_port: ${port}\n`,
    );
    writeFileSync(
      join(configDir, 'client.cfg'),
      `identity = provisioner.image\nplugin.choria.middleware_hosts = ${broker.url}\nplugin.security.provider = file\n`,
    );
    // the image's paths, moved to the installation and the config dir; the monitor port likewise
    const moved = (word: string): string => word.split(installRoot).join(appDir).split(configRoot).join(configDir);
    const wrapper = join(dir, 'choria-provisioner.sh');
    writeFileSync(wrapper, moved(script ?? ''));
    // the wrapper runs `node` from PATH, as in the image; it replaces itself with node (exec)
    const env = { ...process.env, PATH: `${dirname(process.execPath)}${delimiter}${process.env['PATH'] ?? ''}` };
    const child = spawn('/bin/sh', [wrapper, ...docker.execForm('CMD').map(moved)], {
      cwd: configDir,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const probe = health.map((word) => word.replace(`127.0.0.1:${imagePort}`, `127.0.0.1:${port}`));
      expect(probe[2]).toContain(`127.0.0.1:${port}/`);
      await until(
        `the health check to pass (${output.slice(-300)})`,
        async () => {
          try {
            await run(process.execPath, probe.slice(1), { timeout: 5000 });
            return true;
          } catch {
            return false;
          }
        },
        30_000,
        { stepMs: 250 },
      );
      child.kill('SIGTERM');
      expect(await exited, output).toBe(0);
    } finally {
      child.kill('SIGKILL');
      await broker.stop();
    }
  });
});

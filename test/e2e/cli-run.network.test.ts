// `choria-provisioner run` as a process: two sites from two config files against two brokers, the
// process helper example, /metrics and /status, `status`, the PID file and a clean SIGTERM exit.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedFleet } from '../../packages/simulator/src/index.js';
import { freePort, startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { repoRoot } from '@choria-provisioner/test-support/vectors';
import { createTestPki } from '@choria-provisioner/test-support/tls';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const bin = join(repoRoot, 'packages', 'cli', 'dist', 'bin.js');

function cli(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  let out = '';
  const child = spawn(process.execPath, [bin, ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'], env });
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  // 'close', not 'exit': stdout may still hold data when the process has exited
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return { child, output: () => out, exited };
}

async function site(
  dir: string,
  name: string,
  monitor: number,
  extra: string[] = [],
  helper = `${join(repoRoot, 'examples', 'helpers', 'plain-helper.mjs')} --quiet`,
): Promise<{ srv: RunningNatsServer; fleet: SimulatedFleet; config: string }> {
  const srv = await startNatsServer({ jetstream: false });
  cleanups.push(() => srv.stop());
  const fleet = await SimulatedFleet.start({
    servers: [srv.url],
    count: 12,
    token: 's3cret',
    timeScale: 0.01,
    control: false,
    eventFormat: 'none',
    name,
  });
  cleanups.push(() => fleet.stop());
  const choria = join(dir, `${name}.cfg`);
  writeFileSync(
    choria,
    `identity = prov-${name}.example.net\nplugin.choria.middleware_hosts = ${srv.url}\nplugin.security.provider = file\n`,
  );
  const config = join(dir, `${name}.yaml`);
  writeFileSync(
    config,
    [
      `site: ${name}`,
      'workers: 4',
      'interval: 1m',
      'token: s3cret',
      'choria_insecure: true',
      `choria_config: ${choria}`,
      `helper: ${helper}`,
      `monitor_port: ${monitor}`,
      `logfile: ${join(dir, `${name}.log`)}`,
      ...extra,
      '',
    ].join('\n'),
  );
  return { srv, fleet, config };
}

describe('choria-provisioner run (process)', () => {
  it('runs two sites in one process until SIGTERM, serving metrics and status', async () => {
    expect(existsSync(bin), 'run `npm run build` first').toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'cpts-run-'));
    const monitor = await freePort();
    const a = await site(dir, 'lon', monitor);
    const b = await site(dir, 'nyc', monitor);
    const pid = join(dir, 'p.pid');
    const run = cli([
      'run',
      '--config',
      a.config,
      '--config',
      b.config,
      '--pid',
      pid,
      '--monitor-address',
      '127.0.0.1',
    ]);
    await Promise.all([a.fleet.waitForAllProvisioned(60_000), b.fleet.waitForAllProvisioned(60_000)]).catch(
      (err: unknown) => {
        throw new Error(`${String(err)}\n${run.output()}`);
      },
    );
    expect(existsSync(pid)).toBe(true);
    const metrics = await (await fetch(`http://127.0.0.1:${monitor}/metrics`)).text();
    expect(metrics).toContain('choria_provisioner_provisioned{site="lon"} 12');
    expect(metrics).toContain('choria_provisioner_provisioned{site="nyc"} 12');
    expect(metrics).toContain('process_cpu_user_seconds_total');
    const status = (await (await fetch(`http://127.0.0.1:${monitor}/status`)).json()) as {
      sites: { site: string; hosts: unknown[] }[];
    };
    expect(status.sites.map((s) => s.site).sort()).toEqual(['lon', 'nyc']);
    expect(status.sites[0]?.hosts).toHaveLength(12);
    // liveness and readiness for orchestrators: both sites connected, no election
    const health = await fetch(`http://127.0.0.1:${monitor}/healthz`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('ok');
    const ready = await fetch(`http://127.0.0.1:${monitor}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({
      ready: true,
      sites: [
        { site: 'lon', ready: true, reason: 'ready' },
        { site: 'nyc', ready: true, reason: 'ready' },
      ],
    });

    const st = cli(['status', '--url', `http://127.0.0.1:${monitor}`]);
    expect(await st.exited).toBe(0);
    expect(st.output()).toMatch(/site lon: running, queue 0, busy workers 0\/4, hosts 12/);
    // this broker has no JetStream: the history is the process's own, and the status says why
    expect(st.output()).toMatch(
      /history: this process only, 12 nodes \(could not open the history bucket CHORIA_PROVISIONER_HISTORY: no JetStream answers/,
    );
    expect(st.output()).toMatch(/node-1\.example\.net +(held|provisioned) +1 +prov-lon\.example\.net/);

    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(existsSync(pid)).toBe(false);
    for (const f of [a.fleet, b.fleet]) {
      const r = f.report();
      expect(r.totals.violations).toBe(0);
      expect(r.nodes.every((n) => n.configuredCount === 1 && n.restartCount === 1)).toBe(true);
    }
  }, 90_000);

  it('pause, resume, release and retry a running provisioner through its monitor port, with the token only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-run-'));
    const monitor = await freePort();
    const a = await site(dir, 'lon', monitor, ['monitor_api_token: t0ken-for-lon']);
    const run = cli(['run', '--config', a.config, '--monitor-address', '127.0.0.1']);
    await a.fleet.waitForAllProvisioned(60_000);
    const url = `http://127.0.0.1:${monitor}`;
    const noToken = { ...process.env, CHORIA_PROVISIONER_API_TOKEN: '' };
    const refused = cli(['pause', '--url', url], noToken);
    expect(await refused.exited).toBe(3);
    expect(refused.output()).toContain('pause refused (401): a bearer token is required');
    const withEnv = { ...process.env, CHORIA_PROVISIONER_API_TOKEN: 't0ken-for-lon' };
    const pause = cli(['pause', '--url', url], withEnv);
    expect(await pause.exited).toBe(0);
    expect(pause.output()).toBe('site lon: paused\n');
    const status = (await (await fetch(`${url}/status`)).json()) as { sites: { paused: boolean }[] };
    expect(status.sites[0]?.paused).toBe(true);
    // the site lists its nodes only to its token; status reads it as the control commands do
    const anonymous = cli(['status', '--url', url], noToken);
    expect(await anonymous.exited).toBe(0);
    expect(anonymous.output()).toContain('nodes not listed: the site lists them only with its monitor_api_token');
    expect(anonymous.output()).not.toContain('node-1.example.net');
    const listed = cli(['status', '--url', url], withEnv);
    expect(await listed.exited).toBe(0);
    expect(listed.output()).toContain('node-1.example.net');
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 't0ken-for-lon\n', { mode: 0o600 });
    const resume = cli(['resume', '--url', url, '--token-file', tokenFile], noToken);
    expect(await resume.exited).toBe(0);
    expect(resume.output()).toBe('site lon: resumed\n');
    const release = cli(['release', 'node-1.example.net', '--url', url, '--site', 'lon'], withEnv);
    expect(await release.exited).toBe(0);
    expect(release.output()).toBe('site lon: node-1.example.net was not quarantined\n');
    // just provisioned, so still held on the list
    const retry = cli(['retry', 'node-1.example.net', '--url', url], withEnv);
    expect(await retry.exited).toBe(0);
    expect(retry.output()).toBe('site lon: node-1.example.net is already on the list, or the queue is full\n');
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(run.output()).not.toContain('t0ken-for-lon');
  }, 90_000);

  it('serves the monitor port over HTTPS with monitor_tls_cert / monitor_tls_key; status reads it with the CA trusted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-run-'));
    const monitor = await freePort();
    const pki = await createTestPki([], join(dir));
    const a = await site(dir, 'lon', monitor, [
      `monitor_tls_cert: ${pki.server.certFile}`,
      `monitor_tls_key: ${pki.server.keyFile}`,
    ]);
    const run = cli(['run', '--config', a.config, '--monitor-address', '127.0.0.1']);
    await a.fleet.waitForAllProvisioned(60_000);
    const st = cli(['status', '--url', `https://127.0.0.1:${monitor}`], {
      ...process.env,
      NODE_EXTRA_CA_CERTS: pki.caFile,
    });
    expect(await st.exited, st.output()).toBe(0);
    expect(st.output()).toMatch(/site lon: running/);
    const untrusted = cli(['status', '--url', `https://127.0.0.1:${monitor}`], {
      ...process.env,
      NODE_EXTRA_CA_CERTS: '',
    });
    expect(await untrusted.exited).toBe(3);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  }, 90_000);

  it('run --dry-run runs the helper for every node and configures none', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-run-'));
    const monitor = await freePort();
    const a = await site(dir, 'lon', monitor);
    const run = cli(['run', '--config', a.config, '--monitor-address', '127.0.0.1', '--dry-run']);
    const url = `http://127.0.0.1:${monitor}/status`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const st = (await fetch(url).then(
        (r) => r.json(),
        () => undefined,
      )) as { sites: { dryRun: boolean; hostCounts: Record<string, number> }[] } | undefined;
      if (st?.sites[0]?.hostCounts['dry_run'] === 12) {
        expect(st.sites[0].dryRun).toBe(true);
        break;
      }
      if (Date.now() > deadline) throw new Error(`no dry run of all 12 nodes:\n${run.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(
      a.fleet.report().nodes.every((n) => n.state === 'waiting' && n.configuredCount === 0 && n.restartCount === 0),
    ).toBe(true);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(readFileSync(join(dir, 'lon.log'), 'utf8')).toContain('dry run: nothing is sent that changes a node');
  }, 60_000);

  it('helper test: asks a simulated node, runs the helper, changes nothing; --save and --request replay it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-run-'));
    const a = await site(dir, 'lon', 0);
    const saved = join(dir, 'request.json');
    const live = cli(['helper', 'test', '--config', a.config, '--identity', 'node-1.example.net', '--save', saved]);
    const liveCode = await live.exited;
    const out = live.output();
    expect(liveCode, out).toBe(0);
    expect(out).toMatch(/^request:\n\{\n {2}"identity": "node-1.example.net"/);
    expect(out).toContain('reply:\n{');
    expect(out).toMatch(
      /result: OK: dry run: would send choria_provision#configure with \d+ settings \(.*identity.*\), then choria_provision#restart/,
    );
    const node = a.fleet.report({ identities: ['node-1.example.net'] }).nodes[0];
    expect([node?.state, node?.configuredCount, node?.restartCount]).toEqual(['waiting', 0, 0]);
    expect(JSON.parse(readFileSync(saved, 'utf8'))).toMatchObject({
      identity: 'node-1.example.net',
      inventory: expect.any(String),
    });

    const replay = cli(['helper', 'test', '--config', a.config, '--request', saved, '--json']);
    expect(await replay.exited, replay.output()).toBe(0);
    const report = JSON.parse(replay.output()) as {
      ok: boolean;
      request: { identity: string };
      reply: { configuration: Record<string, string> };
    };
    expect(report.ok).toBe(true);
    expect(report.request.identity).toBe('node-1.example.net');
    expect(report.reply.configuration['identity']).toBe('node-1.example.net');

    // a node that is not there: the attempt stops before the helper, and says why
    const absent = cli(['helper', 'test', '--config', a.config, '--identity', 'absent.example.net']);
    expect(await absent.exited).toBe(3);
    expect(absent.output()).toMatch(/result: FAILED: absent\.example\.net is gone/);
    const both = cli(['helper', 'test', '--config', a.config, '--identity', 'x', '--request', saved]);
    expect(await both.exited).toBe(2);
  }, 60_000);

  it('a helper that fails printing secrets (issue 41) leaves none on the monitor port or in the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-run-'));
    const monitor = await freePort();
    const helper = join(dir, 'leaky-helper.sh');
    writeFileSync(
      helper,
      [
        '#!/bin/sh',
        'cat >/dev/null',
        `printf '%s\\n' '{"defer":false,"configuration":{"plugin.choria.network.provisioning.client_password":"hunter2-SECRET","plugin.security.choria.seed":"deadbeefSEED"} BROKEN'`,
        "printf '%s\\n' '-----BEGIN RSA PRIVATE KEY-----' 'MIIEpAIBAAKCAQEAsecretkeymaterial' '-----END RSA PRIVATE KEY-----' 'password=hunter3-SECRET' >&2",
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
    const a = await site(dir, 'lon', monitor, [], helper);
    const run = cli(['run', '--config', a.config, '--monitor-address', '127.0.0.1']);
    const url = `http://127.0.0.1:${monitor}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const st = (await fetch(`${url}/status`).then(
        (r) => r.json(),
        () => undefined,
      )) as { sites: { hostCounts: Record<string, number> }[] } | undefined;
      if (st?.sites[0]?.hostCounts['failed'] === 12) break;
      if (Date.now() > deadline) throw new Error(`the 12 nodes did not all fail:\n${run.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const served = await Promise.all(
      ['/status', '/status?limit=100', '/nodes?limit=500', '/metrics', '/', '/readyz', '/healthz'].map(async (path) =>
        (await fetch(`${url}${path}`)).text(),
      ),
    );
    const status = cli(['status', '--url', url]);
    expect(await status.exited).toBe(0);
    const monitorText = [...served, status.output()].join('\n');
    expect(monitorText).toContain(
      'stdout is not valid JSON: 155 bytes that are not JSON: `,` or `}` expected at position 148',
    );
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    const log = readFileSync(join(dir, 'lon.log'), 'utf8');
    expect(log).toContain('Helper stderr for node-1.example.net: [redacted]');
    for (const secret of ['hunter2-SECRET', 'deadbeefSEED', 'hunter3-SECRET', 'secretkeymaterial']) {
      expect(monitorText, secret).not.toContain(secret);
      expect(log, secret).not.toContain(secret);
    }
    // nothing the helper printed is served at all
    expect(monitorText).not.toContain('BROKEN');
  }, 60_000);

  it('exits 3 when the monitor port is taken', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-run-'));
    const monitor = await freePort();
    const a = await site(dir, 'lon', monitor);
    const holder = cli(['run', '--config', a.config, '--monitor-address', '127.0.0.1']);
    const deadline = Date.now() + 20_000;
    while (
      !(await fetch(`http://127.0.0.1:${monitor}/metrics`).then(
        () => true,
        () => false,
      ))
    ) {
      if (Date.now() > deadline) throw new Error(`first instance did not serve metrics:\n${holder.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const second = cli(['run', '--config', a.config, '--monitor-address', '127.0.0.1']);
    expect(await second.exited).toBe(3);
    expect(second.output()).toContain(`could not listen for monitoring on 127.0.0.1:${monitor}: EADDRINUSE`);
    holder.child.kill('SIGINT');
    expect(await holder.exited).toBe(0);
  }, 60_000);
});

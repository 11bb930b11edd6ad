// `choria-provisioner demo`: the formatting of progress and summary, the nats-server lookup and
// key material as units, and the whole demo in-process against a real nats-server.
import { spawn } from 'node:child_process';
import { createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseProvisionerConfig } from '@choria-provisioner/core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoCommand } from '../src/commands/demo.js';
import { capture } from './capture-io.js';
import { chainToken, makeDemoKeys } from '../src/demo/keys.js';
import { NATS_INSTALL_HINT, findNatsServer } from '../src/demo/nats.js';
import {
  ProgressReporter,
  formatElapsed,
  formatProgressLine,
  formatProgressPlain,
  progressBar,
  ratePerSecond,
  type ProgressSnapshot,
} from '../src/demo/progress.js';
import { runDemo } from '../src/demo/run-demo.js';
import { shellWord } from '../src/demo/parts.js';
import { formatSummary, nodesPerMinute, percentile, verdict, type DemoResult } from '../src/demo/summary.js';

const snap = (over: Partial<ProgressSnapshot> = {}): ProgressSnapshot => ({
  nodes: 500,
  found: 480,
  queued: 12,
  provisioning: 32,
  done: 250,
  failed: 3,
  elapsedMs: 5_000,
  ...over,
});

const result = (over: Partial<DemoResult> = {}): DemoResult => ({
  mode: 'ed25519',
  nodes: 500,
  provisioned: 500,
  nodeStates: { provisioned: 500, waiting: 0 },
  outcomes: { provisioned: 500, failed: 0, deferred: 0 },
  violations: 0,
  violationsByKind: {},
  elapsedMs: 6_000,
  helperMs: [1, 2, 3, 4, 100],
  errors: [],
  metricsUrl: 'http://127.0.0.1:40001/metrics',
  statusUrl: 'http://127.0.0.1:40001/status',
  ...over,
});

describe('progress formatting', () => {
  it('formats elapsed time as m:ss and h:mm:ss', () => {
    expect(formatElapsed(0)).toBe('0:00');
    expect(formatElapsed(7_900)).toBe('0:07');
    expect(formatElapsed(62_000)).toBe('1:02');
    expect(formatElapsed(3_723_000)).toBe('1:02:03');
  });

  it('computes the rate and draws a bar of the requested width, clamped', () => {
    expect(ratePerSecond(100, 4_000)).toBe(25);
    expect(ratePerSecond(100, 0)).toBe(0);
    expect(progressBar(0.5, 10)).toBe('[#####.....]');
    expect(progressBar(2, 4)).toBe('[####]');
    expect(progressBar(-1, 4)).toBe('[....]');
    expect(progressBar(Number.NaN, 3)).toBe('[...]');
  });

  it('the terminal line names every counter, fits the terminal and keeps its length as numbers grow', () => {
    const line = formatProgressLine(snap(), 120);
    expect(line).toBe(
      '[###############...............] 250/500  found 480  queued  12  provisioning  32  done 250  failed   3   50.0/s  0:05',
    );
    expect(line.length).toBeLessThanOrEqual(119);
    const early = formatProgressLine(
      snap({ found: 1, queued: 0, provisioning: 1, done: 0, failed: 0, elapsedMs: 1_000 }),
      120,
    );
    expect(early.length).toBe(line.length);
    // 80 columns: single spaces, no room for a bar, but every counter and the elapsed time stay
    expect(formatProgressLine(snap(), 80)).toBe(
      '250/500 found 480 queued  12 provisioning  32 done 250 failed   3  50.0/s 0:05',
    );
    expect(formatProgressLine(snap(), 40)).toHaveLength(39);
    expect(formatProgressLine(snap(), 0)).toContain('250/500'); // a pty reporting 0 columns
  });

  it('the plain line has the percentage and the counters', () => {
    expect(formatProgressPlain(snap())).toBe(
      'progress: 250/500 provisioned (50%)  found 480  queued 12  provisioning 32  done 250  failed 3  50.0/s  0:05',
    );
  });

  it('the reporter redraws a terminal line ~10 times a second and ends it on stop; plain lines every 2 s', () => {
    vi.useFakeTimers();
    try {
      const writes: string[] = [];
      let done = 0;
      const tty = new ProgressReporter({
        sample: () => snap({ done: done++ }),
        terminal: { write: (t) => void writes.push(t), columns: 120 },
        line: () => undefined,
      });
      tty.start();
      vi.advanceTimersByTime(1_000);
      tty.stop();
      expect(writes.length).toBe(1 + 10 + 2); // first draw, 10 ticks, final draw and the newline
      expect(writes[0]?.startsWith('\r\x1b[2K')).toBe(true);
      expect(writes.at(-1)).toBe('\n');

      const lines: string[] = [];
      const plain = new ProgressReporter({ sample: () => snap(), line: (t) => void lines.push(t) });
      plain.start();
      vi.advanceTimersByTime(4_100);
      plain.stop();
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(/^progress: /);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('summary', () => {
  it('percentiles by nearest rank, on unsorted input', () => {
    expect(percentile([], 50)).toBeUndefined();
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile([7], 99)).toBe(7);
    expect(nodesPerMinute(500, 30_000)).toBe(1000);
  });

  it('a clean run is OK and the table shows counts, rate, helper times and the stopped endpoints', () => {
    const r = result();
    expect(verdict(r)).toEqual({ ok: true, reasons: [] });
    const text = formatSummary(r);
    expect(text).toContain('Demo summary');
    expect(text).toMatch(/provisioned\s+500/);
    expect(text).toMatch(/nodes\/minute\s+5000/);
    expect(text).toMatch(/helper p50 \/ p99\s+3\.0 ms \/ 100 ms \(5 runs\)/);
    expect(text).toContain('http://127.0.0.1:40001/metrics (stopped with the demo)');
    expect(text).toContain('http://127.0.0.1:40001/status (stopped with the demo)');
    expect(text).toContain('OK: all 500 nodes provisioned, no protocol violations.');
  });

  it('a run with unprovisioned nodes, violations or an interruption fails and says why', () => {
    const r = result({
      provisioned: 497,
      nodeStates: { provisioned: 497, waiting: 3 },
      outcomes: { failed: 4, deferred: 2 },
      violations: 2,
      violationsByKind: { 'bad-token': 2 },
      interruption: 'interrupted by SIGINT before every node was provisioned',
      errors: ['could not perform rpcutil#inventory on node-3.example.net: 5 tries'],
      helperMs: [],
    });
    const v = verdict(r);
    expect(v.ok).toBe(false);
    expect(v.reasons).toEqual([
      'interrupted by SIGINT before every node was provisioned',
      '3 of 500 nodes were not provisioned (waiting 3)',
      'the simulated servers recorded 2 protocol violation(s): bad-token 2',
    ]);
    const text = formatSummary(r);
    expect(text).toMatch(/failed attempts\s+4 \(retried\)/);
    expect(text).toMatch(/deferred attempts\s+2/);
    expect(text).toMatch(/violations\s+2: bad-token 2/);
    expect(text).toMatch(/helper p50 \/ p99\s+n\/a/);
    expect(text).toContain('FAILED:');
    expect(text).toContain('  - could not perform rpcutil#inventory on node-3.example.net: 5 tries');
  });

  it('--renew: the table shows the renewals, and nodes not renewed fail the run', () => {
    const renewed = result({ renewals: { renewed: 500, mostOut: 48, concurrency: 50 } });
    expect(verdict(renewed).ok).toBe(true);
    expect(formatSummary(renewed)).toMatch(/renewed\s+500 \(at most 48 in provisioning at once, limit 50\)/);
    expect(formatSummary(renewed)).toContain('OK: all 500 nodes provisioned and renewed, no protocol violations.');
    const short = result({
      renewals: { renewed: 1, mostOut: 1, concurrency: 50 },
      interruption: "the renewals stopped: a node's renewal failed: not provisioned again within 20 s of reprovision",
    });
    expect(verdict(short).reasons).toEqual([
      "the renewals stopped: a node's renewal failed: not provisioned again within 20 s of reprovision",
      '499 of 500 nodes were not renewed',
    ]);
  });
});

describe('nats-server lookup and helper command words', () => {
  const only =
    (...paths: string[]) =>
    (p: string) =>
      paths.includes(p);

  it('prefers NATS_SERVER_BIN, then PATH, then /usr/sbin', () => {
    expect(
      findNatsServer({ NATS_SERVER_BIN: '/opt/nats', PATH: '/bin' }, only('/opt/nats', '/bin/nats-server')),
    ).toEqual({ found: true, bin: '/opt/nats' });
    expect(findNatsServer({ PATH: '/a:/bin' }, only('/bin/nats-server', '/usr/sbin/nats-server'))).toEqual({
      found: true,
      bin: '/bin/nats-server',
    });
    expect(findNatsServer({ PATH: '/bin' }, only('/usr/sbin/nats-server'))).toEqual({
      found: true,
      bin: '/usr/sbin/nats-server',
    });
  });

  it('reports a NATS_SERVER_BIN that is not executable instead of falling back', () => {
    expect(findNatsServer({ NATS_SERVER_BIN: '/nope/nats-server', PATH: '/bin' }, only('/bin/nats-server'))).toEqual({
      found: false,
      reason: 'NATS_SERVER_BIN=/nope/nats-server is not an executable file',
    });
    expect(findNatsServer({ PATH: '/bin' }, only()).found).toBe(false);
  });

  it('quotes helper command words only when needed', () => {
    expect(shellWord('/usr/bin/node')).toBe('/usr/bin/node');
    expect(shellWord('/opt/my helpers/x.mjs')).toBe("'/opt/my helpers/x.mjs'");
    expect(shellWord("/it's")).toBe("'/it'\\''s'");
  });
});

describe('example helpers: stdin mode unchanged, --lines for pools', () => {
  const helpersDir = fileURLToPath(new URL('../../../examples/helpers/', import.meta.url));
  const request = (identity: string): string =>
    JSON.stringify({
      identity,
      csr: null,
      ed25519_pubkey: { public_key: 'ab'.repeat(32), directory: '/etc/choria', signature: 'cd' },
      inventory: '{}',
      jwt: null,
    });

  async function run(
    script: string,
    args: string[],
    input: string,
  ): Promise<{ code: number | null; lines: unknown[] }> {
    const child = spawn(process.execPath, [join(helpersDir, script), ...args], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, CA_DIR: join(tmpdir(), 'cpts-demo-unused-ca') },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stdin.end(input);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    return {
      code,
      lines: out
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as unknown),
    };
  }

  for (const script of ['ed25519-helper.mjs', 'x509-ca-helper.mjs']) {
    it(`${script}: one reply for a whole stdin document, one reply line per request line with --lines`, async () => {
      const once = await run(script, [], request('n1.example.net'));
      expect(once.code).toBe(0);
      expect(once.lines).toHaveLength(1);
      expect(once.lines[0]).toMatchObject({
        configuration: { identity: 'n1.example.net', 'plugin.choria.server.provision': 'false' },
      });

      const pool = await run(
        script,
        ['--lines'],
        `${request('n1.example.net')}\n\nnot json\n${request('n2.example.net')}\n`,
      );
      expect(pool.code).toBe(0);
      expect(pool.lines).toHaveLength(3);
      expect(pool.lines[0]).toMatchObject({ configuration: { identity: 'n1.example.net' } });
      expect(pool.lines[1]).toMatchObject({ defer: true });
      expect(pool.lines[2]).toMatchObject({ configuration: { identity: 'n2.example.net' } });
    });
  }
});

describe('key material', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const tmp = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'cpts-demo-keys-'));
    dirs.push(d);
    return d;
  };

  it('the chain token is signed by the organisation and its tcs covers <jti>.<signer public key>', async () => {
    const keys = await makeDemoKeys('ed25519', tmp());
    const orgHex = keys.fleet.serverJwtVerification?.issuerPublicHex ?? '';
    expect(orgHex).toMatch(/^[0-9a-f]{64}$/);
    const org = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(orgHex, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    const seed = Buffer.from(keys.fleet.jwt?.seedHex ?? '', 'hex');
    const orgKey = createPrivateKey({
      key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]),
      format: 'der',
      type: 'pkcs8',
    });
    const token = chainToken(orgKey, orgHex, 'ab'.repeat(32), 1_700_000_000);
    const [h, c, sig] = token.split('.') as [string, string, string];
    expect(verify(null, Buffer.from(`${h}.${c}`), org, Buffer.from(sig, 'base64url'))).toBe(true);
    const claims = JSON.parse(Buffer.from(c, 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({
      purpose: 'choria_client_id',
      iss: `I-${orgHex}`,
      public_key: 'ab'.repeat(32),
      iat: 1_700_000_000,
    });
    expect(
      verify(
        null,
        Buffer.from(`${String(claims['jti'])}.${'ab'.repeat(32)}`),
        org,
        Buffer.from(String(claims['tcs']), 'hex'),
      ),
    ).toBe(true);
  });

  it('every mode gives a provisioner YAML the config layer accepts, with the right features and helper', async () => {
    const expected = {
      ed25519: { features: { jwt: true, ed25519: true, pki: false }, helper: 'ed25519-helper.mjs' },
      pki: { features: { jwt: true, pki: true, ed25519: false }, helper: 'x509-ca-helper.mjs' },
      jwt: { features: { jwt: true, pki: false, ed25519: false }, helper: 'pool-helper.mjs' },
      plain: { features: { jwt: false, pki: false, ed25519: false }, helper: 'pool-helper.mjs' },
    } as const;
    for (const mode of ['ed25519', 'pki', 'jwt', 'plain'] as const) {
      const keys = await makeDemoKeys(mode, tmp());
      const config = parseProvisionerConfig(`helper: /bin/true\n${keys.yaml}\n`, `${mode}.yaml`);
      expect(config.features, mode).toMatchObject(expected[mode].features);
      expect(keys.helperScript, mode).toBe(expected[mode].helper);
      // the two helpers with a one-shot stdin mode are switched to JSON lines for the pool
      expect(keys.helperArgs, mode).toEqual(expected[mode].helper === 'pool-helper.mjs' ? [] : ['--lines']);
    }
  });
});

describe('choria-provisioner demo end to end (in-process, real nats-server)', () => {
  function pidGone(pid: number): boolean {
    try {
      process.kill(pid, 0);
      return false;
    } catch {
      return true;
    }
  }

  async function demo(
    mode: 'plain' | 'ed25519' | 'pki' | 'jwt',
    nodes: number,
    renew = false,
  ): Promise<{ code: number; io: ReturnType<typeof capture> }> {
    const io = capture();
    const signals = process.listenerCount('SIGINT');
    const code = await runDemo({ mode, nodes, workers: 8, debug: false, renew }, io);
    expect(process.listenerCount('SIGINT')).toBe(signals);
    const pid = Number(/\(pid (\d+),/.exec(io.stdout)?.[1]);
    expect(pid).toBeGreaterThan(0);
    expect(pidGone(pid)).toBe(true);
    return { code, io };
  }

  for (const [mode, nodes] of [
    ['plain', 40],
    ['ed25519', 40],
    ['pki', 20],
    ['jwt', 20],
  ] as const) {
    it(`${mode}: provisions ${nodes} nodes, prints progress and the summary, stops everything, exits 0`, async () => {
      const { code, io } = await demo(mode, nodes);
      expect(code, io.stdout + io.stderr).toBe(0);
      expect(io.stdout).toContain(`mode ${mode}, ${nodes} simulated servers, 8 workers`);
      expect(io.stdout).toMatch(new RegExp(`progress: ${nodes}/${nodes} provisioned \\(100%\\)`));
      expect(io.stdout).toContain('Demo summary');
      expect(io.stdout).toMatch(new RegExp(`provisioned\\s+${nodes}\\n`));
      expect(io.stdout).toMatch(/violations\s+0\n/);
      expect(io.stdout).toMatch(/helper p50 \/ p99\s+[\d.]+ m?s \/ [\d.]+ m?s/);
      expect(io.stdout).toContain(`OK: all ${nodes} nodes provisioned, no protocol violations.`);
      expect(io.stderr).toBe('');
    }, 40_000);
  }

  for (const [mode, nodes] of [
    ['ed25519', 30],
    ['pki', 10],
  ] as const) {
    it(`${mode} --renew: provisions ${nodes} nodes, then renews each one's credentials once, exits 0`, async () => {
      const { code, io } = await demo(mode, nodes, true);
      expect(code, io.stdout + io.stderr).toBe(0);
      const limit = Math.ceil(nodes / 10);
      const line = new RegExp(`renewed\\s+${nodes} \\(at most (\\d+) in provisioning at once, limit ${limit}\\)`);
      expect(io.stdout).toMatch(line);
      expect(io.stdout).toContain(`renewals: ${nodes}/${nodes} renewed, 0 in provisioning mode now`);
      // the canary alone first, then never more than the limit out at once
      expect(Number(line.exec(io.stdout)?.[1])).toBeLessThanOrEqual(limit);
      expect(io.stdout).toMatch(/violations\s+0\n/);
      expect(io.stdout).toContain(`OK: all ${nodes} nodes provisioned and renewed, no protocol violations.`);
      expect(io.stderr).toBe('');
    }, 90_000);
  }

  it('a missing nats-server gives exit 3 and the install hint', async () => {
    const io = capture();
    const code = await demoCommand({ mode: 'plain', nodes: 5, workers: undefined, debug: false }, io, {
      env: { NATS_SERVER_BIN: '/nonexistent/nats-server', PATH: '' },
    });
    expect(code).toBe(3);
    expect(io.stderr).toContain('NATS_SERVER_BIN=/nonexistent/nats-server is not an executable file');
    expect(io.stderr).toContain(NATS_INSTALL_HINT);
    expect(io.stderr).toContain('bash scripts/ensure-nats-server');
    expect(io.stderr).toContain('apt-get install -y nats-server');
    expect(io.stdout).toBe('');
  });

  it('refuses a nonsensical --nodes or --workers with the usage exit code', async () => {
    const io = capture();
    expect(await demoCommand({ mode: 'plain', nodes: 0, workers: undefined, debug: false }, io)).toBe(2);
    expect(await demoCommand({ mode: 'plain', nodes: 5, workers: 1.5, debug: false }, io)).toBe(2);
    expect(io.stderr).toContain('--nodes must be a whole number');
    expect(io.stderr).toContain('--workers must be a whole number');
    expect(await demoCommand({ mode: 'jwt', nodes: 5, renew: true, workers: undefined, debug: false }, io)).toBe(2);
    expect(io.stderr).toContain('--renew needs a mode whose servers are given credentials that expire');
  });
});

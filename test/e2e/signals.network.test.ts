// Every command that starts children cleans them up however it is stopped: SIGHUP (a closed
// terminal), SIGINT, SIGTERM, and an uncaught error (injected with a preloaded module that throws
// on SIGUSR2). Each command is started as a process; once its children are up, the test records
// its whole process tree, stops it, and checks that nothing of that tree is left.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedFleet } from '../../packages/simulator/src/index.js';
import { sleep } from '@choria-provisioner/test-support/wait';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { descendants, isAlive } from '@choria-provisioner/test-support/processes';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const CLI = join(repoRoot, 'packages', 'cli', 'dist', 'bin.js');
const SIMULATOR = join(repoRoot, 'packages', 'simulator', 'dist', 'bin.js');
const CRASH = join(repoRoot, 'test', 'e2e', 'fixtures', 'crash-on-sigusr2.mjs');
const STUCK_HELPER = join(repoRoot, 'test', 'e2e', 'fixtures', 'stuck-pool-helper.mjs');

type Stop = 'SIGHUP' | 'SIGINT' | 'SIGTERM' | 'uncaught error';
const STOPS: readonly Stop[] = ['SIGHUP', 'SIGINT', 'SIGTERM', 'uncaught error'];

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

const running: ChildProcess[] = [];
afterEach(() => {
  for (const c of running.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

function start(args: string[]): Started {
  let out = '';
  const child = spawn(process.execPath, ['--import', CRASH, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { child, output: () => out, exited };
}

async function waitFor<T>(
  what: string,
  probe: () => T | undefined,
  timeoutMs: number,
  output: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; output so far:\n${output()}`);
    await sleep(50);
  }
}

/** Stops `s` the given way and returns its exit status once nothing of its process tree is left. */
async function stopAndCheck(s: Started, stop: Stop, tree: { pid: number; cmdline: string }[]): Promise<number | null> {
  const pid = s.child.pid ?? -1;
  process.kill(pid, stop === 'uncaught error' ? 'SIGUSR2' : stop);
  const timer = sleep(30_000).then(() => 'timeout' as const);
  const result = await Promise.race([s.exited, timer]);
  if (result === 'timeout') throw new Error(`the process did not exit within 30 s after ${stop}:\n${s.output()}`);
  const deadline = Date.now() + 5000;
  let left = tree.filter((p) => isAlive(p.pid));
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(100);
    left = left.filter((p) => isAlive(p.pid));
  }
  expect(left, `left behind after ${stop}:\n${s.output()}`).toEqual([]);
  if (stop !== 'uncaught error') expect(result.signal, s.output()).toBeNull();
  return result.code;
}

describe.each(STOPS)('stopped by %s', (stop) => {
  it('demo: the private nats-server and the pool helpers are gone', async () => {
    const s = start([CLI, 'demo', '--mode', 'plain', '--nodes', '20000', '--workers', '8']);
    const tree = await waitFor(
      'the demo broker and pool helpers',
      () => {
        const t = descendants(s.child.pid ?? -1);
        const broker = t.some((p) => p.cmdline.includes('nats-server'));
        const helpers = t.filter((p) => p.cmdline.includes('pool-helper.mjs')).length;
        return broker && helpers >= 2 ? t : undefined;
      },
      30_000,
      s.output,
    );
    const code = await stopAndCheck(s, stop, tree);
    // interrupted before every node was provisioned: 1; uncaught error: 3
    expect(code, s.output()).toBe(stop === 'uncaught error' ? 3 : 1);
    if (stop === 'uncaught error')
      expect(s.output()).toContain('choria-provisioner: unexpected error, stopping: Error: injected failure');
    else expect(s.output()).toContain(`interrupted by ${stop}`);
  }, 60_000);

  describe('with a broker', () => {
    let broker: RunningNatsServer;
    let fleet: SimulatedFleet;
    let dir: string;
    beforeAll(async () => {
      broker = await startNatsServer({ jetstream: false });
      fleet = await SimulatedFleet.start({
        servers: [broker.url],
        count: 4,
        token: 's3cret',
        control: false,
        eventFormat: 'none',
        name: 'signals',
      });
      dir = mkdtempSync(join(tmpdir(), 'cpts-signals-'));
    });
    afterAll(async () => {
      await fleet?.stop();
      await broker?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('run with pool helpers that never answer: the helpers are gone', async () => {
      const choria = join(dir, 'choria.cfg');
      writeFileSync(
        choria,
        `identity = prov-signals.example.net\nplugin.choria.middleware_hosts = ${broker.url}\nplugin.security.provider = file\n`,
      );
      const config = join(dir, `run-${stop.replace(' ', '-')}.yaml`);
      writeFileSync(
        config,
        [
          'site: signals',
          'workers: 4',
          'interval: 1m',
          'token: s3cret',
          'choria_insecure: true',
          `choria_config: ${choria}`,
          `helper: ${JSON.stringify(`${process.execPath} ${STUCK_HELPER}`)}`,
          'helper_mode: pool',
          'helper_pool_size: 2',
          `logfile: ${join(dir, 'run.log')}`,
          '',
        ].join('\n'),
      );
      const s = start([CLI, 'run', '--config', config]);
      const tree = await waitFor(
        'two pool helpers',
        () => {
          const t = descendants(s.child.pid ?? -1);
          return t.filter((p) => p.cmdline.includes('stuck-pool-helper.mjs')).length >= 2 ? t : undefined;
        },
        30_000,
        s.output,
      );
      const code = await stopAndCheck(s, stop, tree);
      expect(code, s.output()).toBe(stop === 'uncaught error' ? 3 : 0);
    }, 60_000);

    it('simulator: exits with its summary (it starts no children)', async () => {
      const s = start([
        SIMULATOR,
        '--server',
        broker.url,
        '--count',
        '5',
        '--name',
        `sig${STOPS.indexOf(stop)}`,
        '--jwt-signer',
        'none',
        '--event-format',
        'none',
      ]);
      await waitFor('the ready line', () => (s.output().includes('"ready":true') ? true : undefined), 30_000, s.output);
      const tree = descendants(s.child.pid ?? -1);
      const code = await stopAndCheck(s, stop, tree);
      if (stop === 'uncaught error') {
        expect(code).toBe(1);
        expect(s.output()).toContain('choria-simulator: unexpected error, stopping: Error: injected failure');
      } else {
        expect(code).toBe(0);
        expect(s.output()).toContain('{"summary":');
      }
    }, 60_000);
  });
});

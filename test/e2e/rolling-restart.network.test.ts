// A rolling upgrade: the provisioner gets SIGTERM while it works and is started again at once,
// with `quarantine_after: 1`, a long back-off and the node history in JetStream. The attempts cut
// short by the stop are cancellations, not failures: no node may be quarantined or backed off
// for them, every node must end provisioned, and none may be configured twice (a stop finishes a
// configure's restart before it yields).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetHarness } from '@choria-provisioner/test-support/fleet';
import { until } from '@choria-provisioner/test-support/wait';
import { repoRoot } from '@choria-provisioner/test-support/vectors';
import { CHORIA_BROKER_LOGINS } from '@choria-provisioner/test-support/nats-server';

const CLI = join(repoRoot, 'packages', 'cli', 'dist', 'bin.js');
const SLEEPY_HELPER = join(repoRoot, 'test', 'e2e', 'fixtures', 'sleepy-pool-helper.mjs');

const h = new FleetHarness();
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await h.cleanup();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function run(config: string): { child: ChildProcess; exited: Promise<number | null>; output: () => string } {
  let out = '';
  const child = spawn(process.execPath, [CLI, 'run', '--config', config], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => out };
}

/**
 * `timeScale`: the fleet's delays (1: go-choria's own, a restart splay of 2 s); the stop comes once
 * 30 % of the nodes were sent `restart` (their restart accepted), whether or not they are back yet.
 */
async function rollingRestart(timeScale: number, workers: number): Promise<void> {
  {
    const NODES = 300;
    const s = await h.broker({ jetstream: true });
    const fleet = await h.fleet(s.url, {
      count: NODES,
      token: 's3cret',
      latencyMs: 2,
      timeScale,
      eventFormat: 'cloudevents',
    });
    await fleet.waitForBooted(15_000);
    const dir = mkdtempSync(join(tmpdir(), 'cpts-rolling-'));
    dirs.push(dir);
    const choria = join(dir, 'choria.cfg');
    writeFileSync(
      choria,
      `identity = prov-rolling.example.net\nplugin.choria.middleware_hosts = ${s.url}\nplugin.security.provider = file\n`,
    );
    const log = join(dir, 'run.log');
    const config = join(dir, 'site.yaml');
    writeFileSync(
      config,
      [
        'site: rolling',
        `workers: ${workers}`,
        'interval: 1m',
        'token: s3cret',
        'choria_insecure: true',
        `choria_config: ${choria}`,
        // the provisioning account of the Choria Broker layout; the history is in the choria account
        `broker_provisioning_password: ${CHORIA_BROKER_LOGINS.provisioner.password}`,
        // an I/O-bound helper: a stop always finds attempts in every step
        `helper: ${JSON.stringify(`${process.execPath} ${SLEEPY_HELPER} --delay-ms 150`)}`,
        'helper_mode: pool',
        'quarantine_after: 1',
        'retry_backoff: 10m',
        'history_store: kv',
        `logfile: ${log}`,
        '',
      ].join('\n'),
    );

    const first = run(config);
    const logged = (): string => {
      try {
        return readFileSync(log, 'utf8').split('\n').slice(-20).join('\n');
      } catch {
        return '(no log yet)';
      }
    };
    const explain = (err: unknown): never => {
      throw new Error(`${String(err)}\nprocess output:\n${first.output()}\nlog tail:\n${logged()}`);
    };
    const restarted = (): number => fleet.report().nodes.filter((n) => n.restartCount > 0).length;
    await until('30 % sent restart', () => restarted() >= NODES * 0.3, 60_000, { stepMs: 20 }).catch(explain);
    first.child.kill('SIGTERM');
    expect(await first.exited, first.output()).toBe(0);
    const second = run(config);
    await until(
      `all ${NODES} provisioned after the restart`,
      () => fleet.countByState().provisioned === NODES,
      120_000,
    ).catch(explain);
    second.child.kill('SIGTERM');
    expect(await second.exited, second.output()).toBe(0);

    const r = fleet.report();
    expect(r.totals.violations, JSON.stringify(r.totals.violationsByKind)).toBe(0);
    expect(r.totals.maxConfiguredPerCycle).toBe(1);
    expect(r.nodes.every((n) => n.configuredCount === 1 && n.restartCount === 1)).toBe(true);
    const text = readFileSync(log, 'utf8');
    // both processes kept the history in the Choria Streams of the choria account, as on a real broker
    expect(
      text.match(/Keeping the node history in the bucket CHORIA_PROVISIONER_HISTORY of the choria account/g),
    ).toHaveLength(2);
    // the stop cut attempts short, and said so without calling them failures
    expect(text).toMatch(/not a failure\): .*cancelled: the provisioner is stopping/);
    expect(text).not.toMatch(/Quarantined /);
    expect(text).not.toMatch(/Not trying .* again before/);
    expect(text).not.toMatch(/Could not provision /);
  }
}

describe('SIGTERM and an immediate restart of the provisioner', () => {
  it('quarantine_after 1, history in JetStream: every node provisioned, none quarantined, backed off or configured twice', async () => {
    await rollingRestart(0.05, 30);
  }, 240_000);

  // The nodes the stopped process sent `restart` a moment before answer discovery during their
  // restart splay (go-choria holds the agent mutex through it, answering nothing else): the new
  // process reads in the shared history that they were just restarted and leaves them alone for
  // the restart window, so no request reaches a node in its splay or one that left provisioning
  // mode (the simulator's after-restart and configure-after-restart), and none is configured twice.
  it("with go-choria's own restart splay: not one request to a node restarting or restarted by the stopped process", async () => {
    await rollingRestart(1, 20);
  }, 240_000);
});

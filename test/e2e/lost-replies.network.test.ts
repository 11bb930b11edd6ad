// End-to-end: replies of node-changing actions that never reach the provisioner. The simulator
// carries the action out but withholds the reply (as if it was lost on the way), or the broker
// is restarted between a node accepting `restart` and its reply reaching the provisioner. Every
// node must end provisioned (or shut down), none reported failed, and no directed request may
// reach a node after it accepted its restart (the simulator's `after-restart` and
// `configure-after-restart` violations).
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { LostReplyTimings } from '../../packages/core/src/host/lost-reply.js';
import type { FleetOptions, FleetReport, ReplyHook } from '../../packages/simulator/src/index.js';
import { sleep, until } from '@choria-provisioner/test-support/wait';
import type { RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import {
  FleetHarness,
  driveUntilProvisioned,
  expectExactlyOnce,
  metricValue,
  plainConfiguration,
} from '@choria-provisioner/test-support/fleet';

const h = new FleetHarness();
afterEach(() => h.cleanup());

// The fleet acts 100x faster than real servers (timeScale 0.01): the provisioner is told so, and
// waits one more second before taking a node that still answers as one that did not act.
const FAST: LostReplyTimings = { actionDelayScale: 0.01, marginMs: 1000 };

/**
 * A reply hook that holds the first `count` successful replies to `action`, restarts the broker
 * (kill -9, start again) and then drops them: the nodes acted, their replies died with the broker.
 */
function loseWithTheBroker(
  s: RunningNatsServer,
  action: string,
  count: number,
): { hook: ReplyHook; caught: string[]; done: () => Promise<void> } {
  const caught: string[] = [];
  let restarting: Promise<void> | undefined;
  const hook: ReplyHook = async (info) => {
    if (info.action !== action || (restarting !== undefined && caught.length >= count)) return 'send';
    caught.push(info.identity);
    restarting ??= (async () => {
      await until(`${count} replies to ${action} held`, () => caught.length >= count, 10_000);
      await s.restart();
    })();
    await restarting;
    return 'drop';
  };
  const done = async (): Promise<void> => {
    await until('the broker restart', () => restarting !== undefined, 20_000);
    await restarting;
  };
  return { hook, caught, done };
}

/**
 * A fleet whose first `count` successful `action` replies die with a broker restart, and a
 * provisioner that then finishes: returns when every node is provisioned and no attempt runs.
 */
async function runThroughBrokerLoss(action: string, count: number, fleetOptions: Partial<FleetOptions>) {
  const s = await h.broker();
  const loss = loseWithTheBroker(s, action, count);
  const fleet = await h.fleet(s.url, { ...fleetOptions, replyHook: loss.hook });
  await fleet.waitForBooted(10_000);
  const registry = new Registry();
  const p = h.provisioner(s.url, 'workers: 8\n', { registry, rpcTimeoutMs: 4000, lostReply: FAST });
  await p.start();
  await loss.done();
  await driveUntilProvisioned(p, fleet, 45_000);
  await until('every attempt finished', () => attemptsEnded(p), 20_000);
  await sleep(200);
  return { p, fleet, registry, caught: loss.caught };
}

/**
 * No violation, except restarts refused by nodes whose configure was lost with the broker before
 * they applied it: that refusal is the provisioner's deliberate check (docs/protocol.md).
 */
function expectNoMistakes(r: FleetReport): void {
  const { 'restart-refused': _checks, ...mistakes } = r.totals.violationsByKind;
  expect(
    Object.values(mistakes).reduce((a, n) => a + n, 0),
    JSON.stringify(r.totals.violationsByKind),
  ).toBe(0);
  const twice = r.nodes
    .filter((n) => n.configuredCount > 1)
    .map((n) => `${n.identity}: ${JSON.stringify(n.rpcCounts)} ${JSON.stringify(n.violations)}`);
  expect(r.totals.maxConfiguredPerCycle, twice.join('\n')).toBeLessThanOrEqual(1);
}

/**
 * `count` nodes of which the first to accept restart acts on it without its reply ever coming (no
 * events either: only its silence on discovery tells, three missed probes of 2 s), and a started
 * provisioner with one worker.
 */
async function oneWorkerOneLostRestart(count: number, seed: number) {
  const s = await h.broker();
  let lostOn: string | undefined;
  const replyHook: ReplyHook = (info) => {
    if (info.action !== 'restart' || (lostOn !== undefined && lostOn !== info.identity)) return 'send';
    lostOn = info.identity;
    return 'drop';
  };
  const fleet = await h.fleet(s.url, { count, seed, replyHook });
  await fleet.waitForBooted(10_000);
  const registry = new Registry();
  const p = h.provisioner(s.url, 'workers: 1\n', { registry, rpcTimeoutMs: 1000, lostReply: FAST });
  await p.start();
  return { p, fleet, registry };
}

/** No attempt runs, neither on a worker nor watching a node after a lost reply. */
function attemptsEnded(p: { status(q: { limit: number }): { busyWorkers: number; watchingNodes: number } }): boolean {
  const st = p.status({ limit: 0 });
  return st.busyWorkers === 0 && st.watchingNodes === 0;
}

const outcome = (r: Registry, o: string): Promise<number> =>
  metricValue(r, 'choria_provisioner_outcomes', { outcome: o });
const lost = (r: Registry, rpc: string, finding: string): Promise<number> =>
  metricValue(r, 'choria_provisioner_lost_replies', { rpc, finding });

/**
 * Four upgradable nodes on 0.29.4, a helper that asks for 0.30.0 and a request timeout of 2 s:
 * returns once every node is provisioned and no attempt runs. `rediscover: false` leaves finding
 * the updated nodes again to the provisioner (its next discovery is a minute away).
 */
async function upgradeFourNodes(fleetOptions: Partial<FleetOptions>, { rediscover = true } = {}) {
  const s = await h.broker();
  const fleet = await h.fleet(s.url, { count: 4, upgradable: true, version: '0.29.4', ...fleetOptions });
  await fleet.waitForBooted(10_000);
  const registry = new Registry();
  const p = h.provisioner(
    s.url,
    'workers: 4\nupgrades_repository: https://repo.example.net/choria\nfeatures:\n  upgrades: true\n',
    {
      registry,
      rpcTimeoutMs: 2000,
      lostReply: FAST,
      helper: (req) => ({ upgrade: '0.30.0', configuration: plainConfiguration(req) }),
    },
  );
  await p.start();
  if (rediscover) await driveUntilProvisioned(p, fleet, 40_000);
  else
    await until('4 nodes provisioned without another discovery', () => fleet.countByState().provisioned >= 4, 30_000);
  await until('every attempt finished', () => attemptsEnded(p), 20_000);
  return { fleet, registry };
}

/** Every node updated once, by one release_update whose lost reply was found acted on, then provisioned. */
async function expectUpdatedOnce(fleet: { report(): FleetReport }, registry: Registry): Promise<void> {
  for (const n of fleet.report().nodes) {
    expect(n, n.identity).toMatchObject({ version: '0.30.0', updateCount: 1 });
    expect(n.rpcCounts['choria_provision#release_update'], n.identity).toBe(1);
  }
  expect(await lost(registry, 'choria_provision#release_update', 'acted')).toBe(4);
  expect(await lost(registry, 'choria_provision#release_update', 'not_acted')).toBe(0);
  expect(await outcome(registry, 'upgraded')).toBe(4);
  expect(await outcome(registry, 'provisioned')).toBe(4);
  expect(await outcome(registry, 'failed')).toBe(0);
}

describe('lost replies of node-changing actions', () => {
  it('restart carried out without a reply on 10% of the nodes (no events): found gone by discovery, counted provisioned', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 100, lostReplies: { nodes: 0.1, actions: ['restart'] }, seed: 7 });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    const p = h.provisioner(s.url, 'workers: 16\n', { registry, rpcTimeoutMs: 3000, lostReply: FAST });
    await p.start();
    await driveUntilProvisioned(p, fleet, 40_000);
    await until('every attempt finished', () => attemptsEnded(p), 20_000);
    const r = fleet.report();
    expect(r.totals.repliesLost).toBe(10);
    expectExactlyOnce(fleet); // no violation at all, and one configure + one restart per node
    expect(await outcome(registry, 'provisioned')).toBe(100);
    expect(await outcome(registry, 'failed')).toBe(0);
    expect(await lost(registry, 'choria_provision#restart', 'acted')).toBe(10);
    expect(await metricValue(registry, 'choria_provisioner_rpc_errors', { rpc: 'choria_provision#restart' })).toBe(0);
    const lostNodes = r.nodes.filter((n) => n.stats.repliesLost > 0);
    // each of them received exactly one restart request
    for (const n of lostNodes) expect(n.rpcCounts['choria_provision#restart'], n.identity).toBe(1);
  }, 60_000);

  it('a node watched after its lost restart reply gives its worker up: the other nodes are provisioned meanwhile, and stop() ends the watch', async () => {
    const { p, fleet, registry } = await oneWorkerOneLostRestart(6, 8);
    await until('the five other nodes provisioned', async () => (await outcome(registry, 'provisioned')) >= 5, 20_000);
    // with one worker, the others could only have been provisioned beside the watch
    const st = p.status({ limit: 0 });
    expect(st.watchingNodes).toBe(1);
    expect(st.busyWorkers).toBe(0);
    expect(await lost(registry, 'choria_provision#restart', 'acted')).toBe(0);
    // stop() waits for the watch (a restart already sent finishes within the commit grace, or is
    // cancelled at its end, never a failure): the attempt is recorded before stop() returns
    await p.stop();
    expect(p.status({ limit: 0 }).watchingNodes).toBe(0);
    const ended = p.outcomes();
    expect(ended.provisioned + ended.cancelled, JSON.stringify(ended)).toBe(6);
    expect(ended.failed).toBe(0);
    const r = fleet.report();
    expect(r.totals.violations, JSON.stringify(r.totals.violationsByKind)).toBe(0);
    expect(r.nodes.every((n) => n.state === 'provisioned' && n.configuredCount === 1 && n.restartCount === 1)).toBe(
      true,
    );
  }, 60_000);

  it('a watch that begins while the provisioner stops keeps its worker: stop() waits for the attempt and records it', async () => {
    const { p, fleet } = await oneWorkerOneLostRestart(1, 12);
    const restarts = (): number => fleet.report().nodes[0]?.rpcCounts['choria_provision#restart'] ?? 0;
    await until('the restart sent', () => restarts() === 1, 10_000, { stepMs: 5 });
    // stopping before the restart's 1 s timeout: its watch begins during stop(), after stop() has
    // read which attempts to wait for
    const stopping = Date.now();
    await p.stop();
    // the watch probes for seconds (three missed probes of 2 s): stop() waited for it, within the
    // commit grace, instead of closing the connection under it a second after it began
    expect(Date.now() - stopping).toBeGreaterThan(4_000);
    const ended = p.outcomes();
    expect(ended.provisioned + ended.cancelled, JSON.stringify(ended)).toBe(1);
    expect(ended.failed).toBe(0);
    expect(p.status({ limit: 0 }).watchingNodes).toBe(0);
  }, 60_000);

  it('a restart whose reply is outstanding when the broker comes back gives its worker up at once: the queued nodes do not wait out its late-reply grace', async () => {
    const s = await h.broker();
    const loss = loseWithTheBroker(s, 'restart', 1);
    const fleet = await h.fleet(s.url, { count: 4, seed: 10, replyHook: loss.hook });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    // a late-reply grace far longer than the rest of the run: the other nodes can only be
    // provisioned within it if the restart's attempt gave its worker up when the link came back
    const p = h.provisioner(s.url, 'workers: 1\n', {
      registry,
      rpcTimeoutMs: 4000,
      lostReply: { ...FAST, reconnectGraceMs: 10_000 },
    });
    await p.start();
    await loss.done();
    await until('the three other nodes provisioned', async () => (await outcome(registry, 'provisioned')) >= 3, 8_000);
    expect(p.status({ limit: 0 }).watchingNodes).toBe(1);
    // still in its grace: no finding about the lost reply yet
    for (const finding of ['acted', 'not_acted', 'gone', 'unsure'])
      expect(await lost(registry, 'choria_provision#restart', finding), finding).toBe(0);
    await until('every attempt finished', () => attemptsEnded(p), 40_000);
    expect(await outcome(registry, 'provisioned')).toBe(4);
    expect(await outcome(registry, 'failed')).toBe(0);
    expectNoMistakes(fleet.report());
    expect(fleet.report().nodes.every((n) => n.state === 'provisioned' && n.restartCount === 1)).toBe(true);
  }, 90_000);

  it('a watch that ends after the other nodes: the watched node is counted provisioned once its silence proves the restart', async () => {
    const { p, fleet, registry } = await oneWorkerOneLostRestart(4, 9);
    await until('the three other nodes provisioned', async () => (await outcome(registry, 'provisioned')) >= 3, 20_000);
    expect(p.status({ limit: 0 }).watchingNodes).toBe(1);
    await until('every attempt finished', () => attemptsEnded(p), 20_000);
    expect(await outcome(registry, 'provisioned')).toBe(4);
    expect(await lost(registry, 'choria_provision#restart', 'acted')).toBe(1);
    expect(p.status().hostCounts).toEqual({ held: 4 });
    expectExactlyOnce(fleet);
  }, 60_000);

  it('restart and shutdown without replies, with lifecycle events: the events prove it, nothing is sent twice', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, {
      count: 60,
      eventFormat: 'cloudevents',
      lostReplies: { nodes: 0.1, actions: ['restart', 'shutdown'] },
      seed: 11,
    });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    // every third node is shut down on the helper's request, the others configured
    const p = h.provisioner(s.url, 'workers: 16\n', {
      registry,
      rpcTimeoutMs: 3000,
      lostReply: FAST,
      helper: (req) => {
        const n = Number(/node-(\d+)\./.exec(req.identity)?.[1]);
        if (n % 3 === 0) return { shutdown: true, msg: 'decommissioned' };
        return { configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' } };
      },
    });
    await p.start();
    await until(
      'every node provisioned or shut down',
      () => {
        const c = fleet.countByState();
        return c.provisioned === 40 && c.shutdown === 20;
      },
      40_000,
    );
    await until('every attempt finished', () => attemptsEnded(p), 20_000);
    const r = fleet.report();
    expect(r.totals.repliesLost).toBe(6);
    expect(r.totals.violations, JSON.stringify(r.totals.violationsByKind)).toBe(0);
    for (const n of r.nodes) {
      const action = n.state === 'shutdown' ? 'choria_provision#shutdown' : 'choria_provision#restart';
      expect(n.rpcCounts[action], `${n.identity} ${action}`).toBe(1);
    }
    expect(await outcome(registry, 'provisioned')).toBe(40);
    expect(await outcome(registry, 'shutdown')).toBe(20);
    expect(await outcome(registry, 'failed')).toBe(0);
    const byEvents =
      (await lost(registry, 'choria_provision#restart', 'acted')) +
      (await lost(registry, 'choria_provision#shutdown', 'acted'));
    expect(byEvents).toBe(6);
    expect(p.status().hostCounts).toEqual({ held: 60 });
  }, 60_000);

  it('the broker restarted between five nodes accepting restart and their replies: all provisioned, none failed', async () => {
    const { p, fleet, registry, caught } = await runThroughBrokerLoss('restart', 5, {
      count: 80,
      latencyMs: 5,
      latencyJitterMs: 20,
      seed: 3,
    });
    expect(caught).toHaveLength(5);
    const r = fleet.report();
    expectNoMistakes(r);
    for (const identity of caught) {
      const n = r.nodes.find((x) => x.identity === identity);
      expect(n?.state, identity).toBe('provisioned');
      expect(n?.rpcCounts['choria_provision#restart'], identity).toBe(1);
    }
    expect(r.nodes.every((n) => n.state === 'provisioned' && n.restartCount === 1)).toBe(true);
    expect(await outcome(registry, 'failed')).toBe(0);
    expect(await outcome(registry, 'provisioned')).toBe(80);
    expect(await lost(registry, 'choria_provision#restart', 'acted')).toBeGreaterThanOrEqual(5);
    expect(p.status().connected).toBe(true);
  }, 90_000);

  it('configure replies lost with the broker (no events): the restart decides, no node is configured twice', async () => {
    const { fleet, registry, caught } = await runThroughBrokerLoss('configure', 3, {
      count: 40,
      latencyMs: 5,
      seed: 4,
    });
    expect(caught).toHaveLength(3);
    const r = fleet.report();
    expectNoMistakes(r);
    // their configures were applied, so the restarts sent as the check were accepted: no refusal
    for (const identity of caught)
      expect(r.nodes.find((n) => n.identity === identity)?.violationCount, identity).toBe(0);
    expect(r.totals.maxConfiguredPerCycle).toBe(1);
    expect(r.nodes.every((n) => n.state === 'provisioned' && n.configuredCount === 1 && n.restartCount === 1)).toBe(
      true,
    );
    expect(await lost(registry, 'choria_provision#configure', 'unsure')).toBeGreaterThanOrEqual(3);
    expect(await outcome(registry, 'failed')).toBe(0);
    expect(await outcome(registry, 'provisioned')).toBe(40);
  }, 90_000);

  it('a restart request lost before the node saw it (no events): the node still answers past the delay, so it is sent again', async () => {
    const s = await h.broker();
    // drops only the first restart request each selected node receives
    const fleet = await h.fleet(s.url, { count: 10, seed: 5 });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    const p = h.provisioner(s.url, 'workers: 10\n', { registry, rpcTimeoutMs: 1500, lostReply: FAST });
    // Lose the first restart of every node on the way: a NATS connection that drops them would
    // need a proxy, so a subscription-level filter in front of the nodes does it instead.
    for (const node of fleet.nodes) node.dropNextDirected('choria_provision', 'restart');
    await p.start();
    await driveUntilProvisioned(p, fleet, 30_000);
    await until('every attempt finished', () => attemptsEnded(p), 20_000);
    expectExactlyOnce(fleet);
    expect(await lost(registry, 'choria_provision#restart', 'not_acted')).toBe(10);
    expect(await outcome(registry, 'provisioned')).toBe(10);
    for (const n of fleet.report().nodes) expect(n.rpcCounts['choria_provision#restart']).toBe(1);
  }, 60_000);

  it('release_update still downloading when its request times out: the busy node is watched, not sent the update again', async () => {
    // 5 s of download against a 2 s request timeout: the same as a real server whose download
    // outlasts the agent's 20 s deadline (it never answers, and installs the release anyway)
    const { fleet, registry } = await upgradeFourNodes({ eventFormat: 'cloudevents', updateMs: 5_000, seed: 11 });
    // no release_update was sent while the first still ran (`update-while-updating`), none twice
    expectExactlyOnce(fleet);
    await expectUpdatedOnce(fleet, registry);
  }, 60_000);

  it('release_update carried out with its reply and every event lost: the node back on the new version is not sent the update again, and is provisioned at once', async () => {
    // No events at all (as when the broker is down across the server's re-execution) and no
    // reply: the node installs, re-executes 20 ms later in provisioning mode and answers
    // discovery and `jwt` just as a node that never got the request would; only its version
    // tells. Found back already, it is provisioned without waiting for the next discovery.
    const replyHook: ReplyHook = (info) => (info.action === 'release_update' ? 'drop' : 'send');
    const { fleet, registry } = await upgradeFourNodes(
      { eventFormat: 'none', replyHook, seed: 12 },
      { rediscover: false },
    );
    const report = fleet.report();
    // the one refusal per node is the agent-busy check's `jwt` (these nodes have no provisioning
    // JWT): a refusal is an answer, so the agent was idle and only the version could tell
    expect(report.totals.violationsByKind).toEqual({ refused: 4 });
    for (const n of report.nodes) {
      expect(n, n.identity).toMatchObject({ configuredCount: 1, restartCount: 1 });
      expect(n.rpcCounts['choria_provision#jwt'], n.identity).toBe(1);
    }
    await expectUpdatedOnce(fleet, registry);
  }, 60_000);

  it('every restart of an attempt lost: the next attempt restarts the configured node instead of configuring it again', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 5, seed: 6 });
    await fleet.waitForBooted(10_000);
    for (const node of fleet.nodes) node.dropNextDirected('choria_provision', 'restart', 3);
    const registry = new Registry();
    const helped: string[] = [];
    const p = h.provisioner(s.url, 'workers: 5\n', {
      registry,
      rpcTimeoutMs: 1000,
      lostReply: FAST,
      helper: (req) => {
        helped.push(req.identity);
        return { configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' } };
      },
    });
    await p.start();
    await until('the first attempts failed', async () => (await outcome(registry, 'failed')) === 5, 40_000);
    await driveUntilProvisioned(p, fleet, 30_000);
    expectExactlyOnce(fleet); // one configure and one restart per node, no violation
    expect(helped.sort()).toEqual(fleet.identities().sort()); // the helper ran once per node
    expect(await outcome(registry, 'provisioned')).toBe(5);
    for (const n of fleet.report().nodes) expect(n.stats.dropped).toBe(3);
    const messages = p.status().hosts.map((x) => x.lastError ?? '');
    expect(
      messages.every((m) => m === ''),
      messages.join('\n'),
    ).toBe(true);
  }, 60_000);

  it('configure requests and replies lost with the broker, nodes with and without a configuration file: every node provisioned, none configured twice, each refused restart sent once', async () => {
    const s = await h.broker();
    const LOST_REQUESTS = 6;
    const HELD_REPLIES = 3;
    let restarting: Promise<void> | undefined;
    const held: string[] = [];
    let dropping: { stats: { dropped: number } }[] = [];
    // Holds the first configure replies until the nodes whose configure request is lost have
    // received (and ignored) theirs, then restarts the broker: both kinds die with it.
    const hook: ReplyHook = async (info) => {
      if (info.action !== 'configure' || (restarting !== undefined && held.length >= HELD_REPLIES)) return 'send';
      held.push(info.identity);
      restarting ??= (async () => {
        await until(
          'the lost configure requests arrived',
          () => held.length >= HELD_REPLIES && dropping.every((n) => n.stats.dropped >= 1),
          20_000,
        );
        await s.restart();
      })();
      await restarting;
      return 'drop';
    };
    // even nodes boot with a provisioning-mode file, odd ones with none (a package install)
    const fleet = await h.fleet(s.url, {
      count: 40,
      latencyMs: 5,
      seed: 9,
      replyHook: hook,
      configFile: (i) => (i % 2 === 0 ? 'provisioning' : 'missing'),
    });
    await fleet.waitForBooted(10_000);
    const victims = fleet.nodes.slice(0, LOST_REQUESTS);
    for (const node of victims) node.dropNextDirected('choria_provision', 'configure');
    dropping = victims;
    const registry = new Registry();
    // a timeout long enough that every held or dropped request is still outstanding when the
    // broker goes: its loss is then known to be the broker's
    // more workers than held and dropped requests together, or they would all be waiting
    const p = h.provisioner(s.url, 'workers: 16\n', { registry, rpcTimeoutMs: 20_000, lostReply: FAST });
    await p.start();
    await until('the broker restart', () => restarting !== undefined, 30_000);
    await restarting;
    await driveUntilProvisioned(p, fleet, 60_000);
    await until('every attempt finished', () => attemptsEnded(p), 20_000);
    const r = fleet.report();
    expectNoMistakes(r);
    expect(r.nodes.every((n) => n.state === 'provisioned' && n.configuredCount === 1 && n.restartCount === 1)).toBe(
      true,
    );
    // a node whose configure never arrived refused the check restart once, with either text, and
    // was then configured; no refused restart was sent to it a second time
    const refusals: string[] = [];
    for (const node of victims) {
      const n = r.nodes.find((x) => x.identity === node.identity);
      const refused = (n?.violations ?? []).filter((v) => v.kind === 'restart-refused');
      expect(
        refused.length,
        `${node.identity}: ${JSON.stringify(n?.violations)} ${JSON.stringify(n?.rpcCounts)}`,
      ).toBeLessThanOrEqual(1);
      expect(n?.rpcCounts['choria_provision#restart'], node.identity).toBe(refused.length + 1);
      refusals.push(...refused.map((v) => v.detail));
    }
    // both of go-choria's refusals were met and understood
    expect(
      refusals.some((t) => /no such file or directory/.test(t)),
      refusals.join('\n'),
    ).toBe(true);
    expect(
      refusals.some((t) => /enables provisioning/.test(t)),
      refusals.join('\n'),
    ).toBe(true);
    // every refusal anywhere is the single check after a configure whose fate was unsure (also
    // configures published while the broker was down), and no node refused twice
    expect(r.totals.violationsByKind['restart-refused'] ?? 0).toBeLessThanOrEqual(
      await lost(registry, 'choria_provision#configure', 'unsure'),
    );
    for (const n of r.nodes)
      expect(n.violations.filter((v) => v.kind === 'restart-refused').length, n.identity).toBeLessThanOrEqual(1);
    expect(await outcome(registry, 'failed')).toBe(0);
    expect(await outcome(registry, 'provisioned')).toBe(40);
    expect(p.status().hosts.every((x) => x.lastError === undefined || x.lastError === '')).toBe(true);
  }, 120_000);
});

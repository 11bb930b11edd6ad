// Active/active scheduling rules with scripted HostRunners (no simulator, a real broker): instances
// split what they are offered, take over a leaver's share at once, wait out a lock on a node they
// own, forget nodes another member finished or that announced a restart, and go lock-only when
// the broker denies the coordination subjects.
import { Registry } from 'prom-client';
import { connect } from 'nats';
import { afterEach, describe, expect, it } from 'vitest';
import { Provisioner } from '../../src/provisioner/provisioner.js';
import { rendezvousOwner } from '../../src/provisioner/coordination/index.js';
import type { HostJob, HostResult } from '../../src/host/types.js';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { sleep, until } from '@choria-provisioner/test-support/wait';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const nodes = Array.from({ length: 60 }, (_, i) => `n${i}.example.net`);
const shutdownEvent = (identity: string): Uint8Array =>
  new TextEncoder().encode(
    JSON.stringify({
      protocol: 'io.choria.lifecycle.v1.shutdown',
      id: `s-${identity}`,
      identity,
      component: 'provision_mode_server',
      timestamp: Math.floor(Date.now() / 1000),
    }),
  );

async function broker(config?: string): Promise<RunningNatsServer> {
  const srv = await startNatsServer({ jetstream: false, ...(config !== undefined ? { config } : {}) });
  cleanups.push(() => srv.stop());
  return srv;
}

async function instance(
  url: string,
  name: string,
  runner: (job: HostJob) => Promise<HostResult>,
  yaml = '',
  workers = 2,
): Promise<Provisioner> {
  const config = testConfig(
    `workers: ${workers}\ncoordination: active_active\ncoordination_heartbeat: 100ms\ncoordination_lock_retry: 1s\n${yaml}`,
  );
  const p = new Provisioner({
    config,
    choria: testSettings(url, config, name),
    registry: new Registry(),
    hostRunner: runner,
    helper: () => ({}),
    stopTimeoutMs: 2000,
  });
  cleanups.push(() => p.stop());
  await p.start();
  return p;
}

/** The nodes rendezvous hashing gives `p` (its share without any hand-over). */
function shareOf(p: Provisioner, of: readonly string[]): string[] {
  const view = p.status().coordination.membership;
  const self = view?.members.find((m) => m.self)?.member;
  const members = view?.members.map((m) => m.member) ?? [];
  return of.filter((n) => rendezvousOwner(n, members) === self);
}

const formed = (p: Provisioner, members: number): boolean =>
  p.status().coordination.membership?.state === 'formed' &&
  p.status().coordination.membership?.members.length === members;

describe('Provisioner in active/active mode', () => {
  it("splits the offered nodes between the members and takes over a leaver's share at once", async () => {
    const srv = await broker();
    const ran: Record<string, string[]> = { a: [], b: [] };
    // b's workers stay busy until released, so its share waits in its queue
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // without the hand-over: idle a would take b's queue (tested below)
    const noHandover = 'coordination_handover: false\n';
    const a = await instance(
      srv.url,
      'a.example.net',
      async (job) => {
        ran['a']!.push(job.identity);
        return { outcome: 'provisioned' };
      },
      noHandover,
    );
    const b = await instance(
      srv.url,
      'b.example.net',
      async (job) => {
        ran['b']!.push(job.identity);
        await Promise.race([gate, new Promise((r) => job.signal.addEventListener('abort', r))]);
        return { outcome: 'failed', message: 'stopped' };
      },
      noHandover,
    );
    await until('both formed with two members', () => formed(a, 2) && formed(b, 2), 5000);
    for (const n of nodes) {
      a.offer(n, 'discovery');
      b.offer(n, 'discovery');
    }
    await until(
      'a finished its share',
      () => a.status().busyWorkers === 0 && a.status().queue === 0 && ran['a']!.length > 0,
    );
    const aShare = ran['a']!.length;
    expect(aShare).toBeGreaterThan(10);
    expect(aShare).toBeLessThan(50);
    expect(ran['a']!.filter((n) => ran['b']!.includes(n))).toEqual([]);
    expect(a.status().coordination.foreignNodes).toBe(nodes.length - aShare);

    // b leaves: a takes over b's whole share without another discovery (the nodes b had in
    // flight too: here no node lock stands in the way, on a real node a waits for it)
    await b.stop();
    release();
    await until('a took over the rest', () => ran['a']!.length === nodes.length && a.status().busyWorkers === 0, 5000);
    expect(new Set(ran['a']).size).toBe(ran['a']!.length);
    expect(a.status().coordination.membership?.members.map((m) => m.instance)).toEqual(['a.example.net']);
  });

  it('waits out a lock on a node it owns, and forgets it when the holder finishes or the node restarts', async () => {
    const srv = await broker();
    const jobs: string[] = [];
    const p = await instance(srv.url, 'a.example.net', async (job) => {
      jobs.push(job.identity);
      return jobs.filter((j) => j === job.identity).length === 1
        ? { outcome: 'skipped_locked', message: 'locked elsewhere' }
        : { outcome: 'provisioned' };
    });
    await until('formed', () => formed(p, 1), 5000);
    for (const n of ['x1', 'x2', 'x3']) p.offer(n, 'discovery');
    await until('all three wait for their lock', () => p.status().hostCounts['locked'] === 3);
    const locked = p.status().hosts.find((h) => h.identity === 'x1');
    expect(locked?.state).toBe('locked');
    expect(Date.parse(locked?.nextAttemptAt ?? '') - Date.now()).toBeGreaterThan(500);

    // x2: another member reports it finished; x3: the node announces its restart
    const nc = await connect({ servers: srv.url });
    cleanups.push(() => nc.close());
    nc.publish(
      'provisioning.coordination.test.done',
      JSON.stringify({ protocol: 'choria-provisioner:done:1', instance: 'b.example.net', nodes: ['x2'] }),
    );
    nc.publish('choria.lifecycle.event.shutdown.provision_mode_server', shutdownEvent('x3'));
    await until('x1 retried after the lock wait', () => jobs.length === 4, 4000);
    await sleep(1500);
    expect(jobs).toEqual(['x1', 'x2', 'x3', 'x1']);
    expect(p.status().hostCounts).toMatchObject({ held: 1 });
    expect(p.status().hostCounts['locked']).toBeUndefined();
  });

  it('a member that joins leaves the nodes others are provisioning to them (busy notice) and runs the rest of its share', async () => {
    const srv = await broker();
    const ranA: string[] = [];
    const ranB: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // a's 16 workers stay in their nodes until released; with the hand-over off b asks for none
    const a = await instance(
      srv.url,
      'a.example.net',
      async (job) => {
        ranA.push(job.identity);
        await Promise.race([gate, new Promise((r) => job.signal.addEventListener('abort', r))]);
        return { outcome: 'provisioned' };
      },
      'coordination_handover: false\n',
      16,
    );
    await until('a formed alone', () => formed(a, 1) && a.status().coordination.membership !== undefined, 5000);
    for (const n of nodes) a.offer(n, 'discovery');
    await until('a busy with 16 nodes', () => ranA.length === 16);
    const inFlightAtA = [...ranA];
    const b = await instance(
      srv.url,
      'b.example.net',
      async (job) => {
        ranB.push(job.identity);
        return { outcome: 'provisioned' };
      },
      'coordination_handover: false\n',
    );
    await until('both formed with two members', () => formed(a, 2) && formed(b, 2), 5000);
    // b's discovery finds the whole fleet
    for (const n of nodes) b.offer(n, 'discovery');
    const bShare = shareOf(b, nodes);
    const busyForB = inFlightAtA.filter((n) => bShare.includes(n));
    expect(busyForB.length).toBeGreaterThan(0); // 16 nodes in flight: all a's by chance once in 65,536 runs
    await until(
      "b ran its share but a's nodes in flight",
      () => bShare.filter((n) => !busyForB.includes(n)).every((n) => ranB.includes(n)),
      5000,
    );
    await sleep(300);
    expect(ranB.filter((n) => busyForB.includes(n))).toEqual([]);
    // a finishes them; its done notices end b's interest
    release();
    await until('every node run', () => new Set([...ranA, ...ranB]).size === nodes.length, 5000);
    await sleep(300);
    expect([...ranA, ...ranB].sort()).toEqual([...nodes].sort());
    expect(b.status().hosts.filter((h) => busyForB.includes(h.identity) && h.state !== 'provisioned')).toEqual([]);
  });

  it('sends its first discovery once the membership has settled, not while it still listens for the members', async () => {
    const srv = await broker();
    const watcher = await connect({ servers: srv.url });
    cleanups.push(() => watcher.close());
    const seen: { what: string; at: number }[] = [];
    watcher.subscribe('provisioning.coordination.>', {
      callback: () => seen.push({ what: 'heartbeat', at: performance.now() }),
    });
    watcher.subscribe('provisioning.broadcast.agent.discovery', {
      callback: () => seen.push({ what: 'discovery', at: performance.now() }),
    });
    await watcher.flush();
    await instance(srv.url, 'a.example.net', async () => ({ outcome: 'provisioned' }), '', 2);
    await until('a discovery', () => seen.some((s) => s.what === 'discovery'), 5000);
    const heartbeat = seen.find((s) => s.what === 'heartbeat');
    const discovery = seen.find((s) => s.what === 'discovery');
    // settled 100 ms after its own first heartbeat came back (the 100 ms heartbeat of these tests
    // would settle it as well): the discovery comes after that
    expect(heartbeat).toBeDefined();
    expect(discovery!.at - heartbeat!.at).toBeGreaterThanOrEqual(80);
  });

  it('goes lock-only when the broker denies the coordination subjects, and says so in status and metrics', async () => {
    const srv = await broker(
      'authorization { users: [ { user: provisioner, password: pw, permissions: { publish: { deny: ["provisioning.coordination.>"] }, subscribe: { deny: ["provisioning.coordination.>"] } } } ] }',
    );
    const ran: string[] = [];
    const p = await instance(
      srv.url,
      'a.example.net',
      async (job) => {
        ran.push(job.identity);
        return { outcome: 'provisioned' };
      },
      'broker_provisioning_password: pw\n',
    );
    await until('lock-only', () => p.status().coordination.effective === 'lock_only', 5000);
    for (const n of nodes) p.offer(n, 'discovery');
    await until('every node tried', () => ran.length === nodes.length);
    const metrics = await p.metrics.registry.metrics();
    expect(metrics).toContain(
      'choria_provisioner_coordination_mode{site="test",identity="a.example.net",mode="lock_only"} 1',
    );
    expect(metrics).toContain(
      'choria_provisioner_coordination_mode{site="test",identity="a.example.net",mode="active_active"} 0',
    );
  });
});

describe('Provisioner in active/active mode: the hand-over of queued nodes', () => {
  it('an idle member takes queued nodes from a busy one; every node runs once', async () => {
    const srv = await broker();
    const ran: Record<string, string[]> = { a: [], b: [] };
    const a = await instance(srv.url, 'a.example.net', async (job) => {
      ran['a']!.push(job.identity);
      return { outcome: 'provisioned' };
    });
    // b is slow: alone it would need ~30 x 120 ms / 2 workers for its share
    const b = await instance(srv.url, 'b.example.net', async (job) => {
      ran['b']!.push(job.identity);
      await sleep(120);
      return { outcome: 'provisioned' };
    });
    await until('both formed with two members', () => formed(a, 2) && formed(b, 2), 5000);
    const bShare = shareOf(b, nodes);
    expect(bShare.length).toBeGreaterThan(10);
    for (const n of nodes) {
      a.offer(n, 'discovery');
      b.offer(n, 'discovery');
    }
    await until(
      'every node ran',
      () =>
        ran['a']!.length + ran['b']!.length === nodes.length && a.status().busyWorkers + b.status().busyWorkers === 0,
      10_000,
    );
    await sleep(300);
    const all = [...ran['a']!, ...ran['b']!];
    expect(all.length).toBe(nodes.length);
    expect(new Set(all).size).toBe(nodes.length);
    // a ran part of b's share: b handed it over from its queue
    const taken = ran['a']!.filter((n) => bShare.includes(n));
    expect(taken.length).toBeGreaterThan(0);
    expect(ran['b']!.length).toBeLessThan(bShare.length);
    expect(b.status().hosts.filter((h) => h.state === 'queued')).toEqual([]);
    const given = await b.metrics.registry.getSingleMetricAsString('choria_provisioner_handed_over_nodes');
    const takenMetric = await a.metrics.registry.getSingleMetricAsString('choria_provisioner_handed_over_nodes');
    expect(given).toMatch(
      /choria_provisioner_handed_over_nodes\{site="test",identity="b.example.net",direction="given"\} [1-9]/,
    );
    expect(takenMetric).toContain(
      `choria_provisioner_handed_over_nodes{site="test",identity="a.example.net",direction="taken"} ${taken.length}`,
    );
  });

  it('a member that joins leaves the nodes handed over to another member to it, queued or in flight', async () => {
    const srv = await broker();
    const fleet = Array.from({ length: 120 }, (_, i) => `m${i}.example.net`);
    const ranC: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held = async (job: HostJob): Promise<HostResult> => {
      await Promise.race([gate, new Promise((r) => job.signal.addEventListener('abort', r))]);
      return { outcome: 'provisioned' };
    };
    let aShare: string[] = [];
    // a: one worker, held, so its queue stays long; b: runs its own share at once, then holds
    // what it takes from a
    const a = await instance(srv.url, 'a.example.net', held, '', 1);
    const b = await instance(
      srv.url,
      'b.example.net',
      async (job) => (aShare.includes(job.identity) ? held(job) : { outcome: 'provisioned' }),
      '',
      8,
    );
    await until('a and b formed with two members', () => formed(a, 2) && formed(b, 2), 5000);
    aShare = shareOf(a, fleet);
    for (const n of fleet) {
      a.offer(n, 'discovery');
      b.offer(n, 'discovery');
    }
    // b, idle after its own share, asks a and is handed part of a's queue
    const grantedToB = (): string[] =>
      b
        .status()
        .hosts.filter((h) => aShare.includes(h.identity) && (h.state === 'queued' || h.state === 'provisioning'))
        .map((h) => h.identity);
    await until('b holds nodes handed over by a', () => grantedToB().length >= 16, 5000);
    const c = await instance(srv.url, 'c.example.net', async (job) => {
      ranC.push(job.identity);
      return { outcome: 'provisioned' };
    });
    await until('three members everywhere', () => [a, b, c].every((p) => formed(p, 3)), 5000);
    for (const n of fleet) c.offer(n, 'discovery');
    await until(
      'c done with what it may run',
      () => ranC.length > 0 && c.status().busyWorkers === 0 && c.status().hostCounts['queued'] === undefined,
      5000,
    );
    await sleep(500);
    // b still holds what a handed it (its runner waits); some of it is c's by rendezvous hashing
    const handed = grantedToB();
    expect(handed.length).toBeGreaterThanOrEqual(16);
    expect(handed.filter((n) => shareOf(c, fleet).includes(n)).length).toBeGreaterThan(0); // each c's by a chance of one in three
    expect(ranC.filter((n) => handed.includes(n))).toEqual([]);
    release();
  });

  it('a taker that leaves before running what it took gives it back to the member that handed it over', async () => {
    const srv = await broker();
    const done = new Set<string>();
    let bShare: string[] = [];
    // a finishes its own share at once and stalls on what it takes from b (until it stops)
    const a = await instance(srv.url, 'a.example.net', async (job) => {
      if (!bShare.includes(job.identity)) {
        done.add(job.identity);
        return { outcome: 'provisioned' };
      }
      await new Promise((r) => job.signal.addEventListener('abort', r));
      return { outcome: 'failed', message: 'stopped' };
    });
    const b = await instance(srv.url, 'b.example.net', async (job) => {
      await sleep(100);
      done.add(job.identity);
      return { outcome: 'provisioned' };
    });
    await until('both formed with two members', () => formed(a, 2) && formed(b, 2), 5000);
    bShare = shareOf(b, nodes);
    for (const n of nodes) {
      a.offer(n, 'discovery');
      b.offer(n, 'discovery');
    }
    await until("a took some of b's queue", () => a.status().hosts.some((h) => bShare.includes(h.identity)), 5000);
    await a.stop();
    await until('b provisioned everything a left', () => nodes.every((n) => done.has(n)), 15_000);
    expect(b.status().hosts.filter((h) => h.state === 'queued')).toEqual([]);
  });
});

describe('Provisioner in active/active mode: the hand-over, spoken to from outside', () => {
  it('grants queued nodes to a member that asks, and takes them back when that member dies silently', async () => {
    const srv = await broker();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran: string[] = [];
    const a = await instance(srv.url, 'a.example.net', async (job) => {
      ran.push(job.identity);
      await gate;
      return { outcome: 'provisioned' };
    });
    // a member written against the wire format alone: heartbeats, one ask, then silence
    const nc = await connect({ servers: srv.url });
    cleanups.push(() => nc.close());
    const enc = (o: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(o));
    const grants: { nodes: { identity: string }[] }[] = [];
    nc.subscribe('provisioning.coordination.test.work.fake01', {
      callback: (_e, m) =>
        grants.push(JSON.parse(new TextDecoder().decode(m.data)) as { nodes: { identity: string }[] }),
    });
    const beat = (): void =>
      nc.publish(
        'provisioning.coordination.test.members',
        enc({
          protocol: 'choria-provisioner:member:1',
          instance: 'z.example.net',
          incarnation: 'fake01',
          interval_ms: 100,
          leaving: false,
          owned: 0,
          provisioned: 0,
          queued: 0,
          version: 'fake',
        }),
      );
    beat();
    const beating = setInterval(beat, 100);
    cleanups.push(async () => clearInterval(beating));
    await until('a formed with the fake member', () => formed(a, 2), 5000);
    const self = a.status().coordination.membership?.members.find((m) => m.self)?.member ?? '';
    for (const n of nodes) a.offer(n, 'discovery');
    const aShare = shareOf(a, nodes);
    await until('a busy with a queue', () => a.status().busyWorkers === 2 && a.status().queue > 4);
    nc.publish(
      `provisioning.coordination.test.work.${self.split('#')[1]}`,
      enc({ protocol: 'choria-provisioner:ask:1', instance: 'z.example.net', incarnation: 'fake01', want: 5 }),
    );
    await until('a granted some', () => grants.length === 1);
    const granted = grants[0]!.nodes.map((n) => n.identity);
    expect(granted).toHaveLength(5);
    expect(granted.every((n) => aShare.includes(n))).toBe(true);
    expect(a.status().hosts.filter((h) => granted.includes(h.identity))).toEqual([]);
    // the taker dies without a word: after three of its heartbeats a takes its nodes back
    clearInterval(beating);
    await until('the fake member expired', () => formed(a, 1), 5000);
    release();
    await until(
      'a ran its whole share, the granted nodes too',
      () => aShare.every((n) => ran.includes(n)) && a.status().busyWorkers === 0,
      10_000,
    );
    expect(new Set(ran).size).toBe(ran.length);
    expect(await a.metrics.registry.getSingleMetricAsString('choria_provisioner_handed_over_nodes')).toContain(
      'direction="given"} 5',
    );
  });
});

describe('Provisioner, every mode', () => {
  it('drops a queued node that announces a restart or shutdown, but not the one in flight', async () => {
    const srv = await broker();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const jobs: string[] = [];
    const config = testConfig('workers: 1\n');
    const p = new Provisioner({
      config,
      choria: testSettings(srv.url, config),
      registry: new Registry(),
      hostRunner: async (job) => {
        jobs.push(job.identity);
        await gate;
        return { outcome: 'provisioned' };
      },
      helper: () => ({}),
      stopTimeoutMs: 2000,
    });
    cleanups.push(() => p.stop());
    await p.start();
    p.offer('busy', 'discovery');
    p.offer('waiting', 'discovery');
    await until('one in flight, one queued', () => p.status().busyWorkers === 1 && p.status().queue === 1);
    const nc = await connect({ servers: srv.url });
    cleanups.push(() => nc.close());
    nc.publish('choria.lifecycle.event.shutdown.provision_mode_server', shutdownEvent('waiting'));
    nc.publish('choria.lifecycle.event.shutdown.provision_mode_server', shutdownEvent('busy'));
    await until('the queued one is gone', () => p.status().hosts.every((h) => h.identity !== 'waiting'));
    expect(p.status().hosts.map((h) => [h.identity, h.state])).toEqual([['busy', 'provisioning']]);
    release();
    await until('busy finished', () => p.status().busyWorkers === 0);
    await sleep(200);
    expect(jobs).toEqual(['busy']);
  });
});

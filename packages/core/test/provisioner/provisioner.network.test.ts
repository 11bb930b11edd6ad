// Scheduler rules of the Provisioner with a scripted HostRunner (no simulator, a real broker):
// de-duplication, the post-success hold, failures leaving the list, pause handling, graceful stop,
// status, and the memory of nodes an attempt configured but could not restart.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connect } from 'nats';
import { Provisioner } from '../../src/provisioner/provisioner.js';
import type { HostJob, HostResult } from '../../src/host/types.js';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { testClient, testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { until } from '@choria-provisioner/test-support/wait';
import { discoveryResponder } from '../choria/support/discovery-responder.js';
import { capturingLogger } from './election/election-support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function setup(
  runner: (job: HostJob) => Promise<HostResult>,
  opts: { holdMs?: number; workers?: number; yaml?: string } = {},
) {
  const srv: RunningNatsServer = await startNatsServer({ jetstream: false });
  cleanups.push(() => srv.stop());
  // every name asked for by name is a live node: it answers admission's directed discovery
  const nodes = await discoveryResponder(srv.url, (req, send) => req.filter.identity.forEach(send));
  cleanups.push(() => nodes.close());
  const config = testConfig(`workers: ${opts.workers ?? 2}\n${opts.yaml ?? ''}`);
  const registry = new Registry();
  const p = new Provisioner({
    config,
    choria: testSettings(srv.url, config),
    registry,
    hostRunner: runner,
    helper: () => ({}),
    stopTimeoutMs: 2000,
    ...(opts.holdMs !== undefined ? { holdMs: opts.holdMs } : {}),
  });
  cleanups.push(() => p.stop());
  await p.start();
  return { p, registry, url: srv.url };
}

/**
 * A broker with a fleet that answers every discovery through `answer`, which gets a function that
 * sends one node's reply, and a provisioner on it with a scripted runner.
 */
async function discoveringSetup(
  answer: (send: (sender: string) => void) => void,
  runner: (job: HostJob) => Promise<HostResult>,
  workers: number,
) {
  const srv = await startNatsServer({ jetstream: false });
  cleanups.push(() => srv.stop());
  const fleet = await discoveryResponder(srv.url, (_req, send) => answer(send));
  cleanups.push(() => fleet.close());
  const config = testConfig(`workers: ${workers}\n`);
  const p = new Provisioner({
    config,
    choria: testSettings(srv.url, config),
    registry: new Registry(),
    hostRunner: runner,
    helper: () => ({}),
    stopTimeoutMs: 2000,
  });
  cleanups.push(() => p.stop());
  return p;
}

describe('Provisioner scheduling', () => {
  it('refuses discovery replies whose sender fails the identity rule, with its own connection or one handed in, and counts them', async () => {
    for (const handedIn of [false, true]) {
      const srv = await startNatsServer({ jetstream: false });
      cleanups.push(() => srv.stop());
      const fleet = await discoveryResponder(srv.url, (_req, send) =>
        ['good-1.example.net', 'a b', '*', 'x'.repeat(300)].forEach(send),
      );
      cleanups.push(() => fleet.close());
      const config = testConfig('workers: 1\n');
      const registry = new Registry();
      const client = handedIn ? await testClient(testSettings(srv.url, config)) : undefined;
      if (client !== undefined) cleanups.push(() => client.close());
      const jobs: string[] = [];
      const p = new Provisioner({
        config,
        choria: testSettings(srv.url, config),
        registry,
        ...(client !== undefined ? { client } : {}),
        hostRunner: async (job) => (jobs.push(job.identity), { outcome: 'provisioned' }),
        helper: () => ({}),
        stopTimeoutMs: 2000,
      });
      cleanups.push(() => p.stop());
      await p.start();
      await p.discover();
      await until('the good node provisioned', () => jobs.length === 1);
      expect(jobs).toEqual(['good-1.example.net']);
      expect(p.status().hosts.map((h) => h.identity)).toEqual(['good-1.example.net']);
      expect(await registry.metrics(), handedIn ? 'handed in' : 'own').toMatch(
        /choria_provisioner_refused_identities\{site="test",source="discovery"\} [3-9]/,
      );
      await p.stop();
    }
  });

  it('backs a failing node off, quarantines it after quarantine_after failures, and lets it go on release, retry or reboot', async () => {
    const jobs: string[] = [];
    const { p, registry, url } = await setup(
      async (job) => {
        jobs.push(job.identity);
        return { outcome: 'failed', message: `could not provision ${job.identity}: CSR refused` };
      },
      { yaml: 'retry_backoff: 400ms\nretry_backoff_max: 400ms\nquarantine_after: 2\n' },
    );
    const settled = (n: number) =>
      until(`attempt ${n}`, () => jobs.length === n && p.status().busyWorkers === 0 && p.status().queue === 0);
    expect(p.offer('n1', 'discovery')).toBe(true);
    await settled(1);
    // within the back-off (200-400 ms) a discovery does not bring it back
    expect(p.offer('n1', 'discovery')).toBe(false);
    expect(p.status().hosts[0]).toMatchObject({
      identity: 'n1',
      state: 'failed',
      failures: 1,
      nextAttemptAt: expect.any(String),
    });
    await until('the back-off to end', () => p.offer('n1', 'discovery'), 2000);
    await settled(2);
    // the second failure in a row: quarantined, until something lets it go
    const q = p.status().hosts[0];
    expect(q).toMatchObject({
      identity: 'n1',
      state: 'quarantined',
      failures: 2,
      lastError: 'could not provision n1: CSR refused',
      quarantinedAt: expect.any(String),
    });
    expect(p.status().hostCounts).toEqual({ quarantined: 1 });
    await until('the gauge', async () =>
      (await registry.metrics()).includes('choria_provisioner_quarantined_nodes{site="test"} 1'),
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(p.offer('n1', 'discovery')).toBe(false);
    // released by an operator: tried with the next discovery
    expect(p.release('n1')).toBe(true);
    expect(p.release('n1')).toBe(false);
    expect(p.offer('n1', 'discovery')).toBe(true);
    await settled(3);
    expect(p.offer('n1', 'discovery')).toBe(false); // backing off again (1 failure in a row)
    expect(p.retry('n1')).toBe('queued'); // retry ends the back-off and queues it at once
    await settled(4);
    expect(p.status().hosts[0]).toMatchObject({ state: 'failed', failures: 1 });
    await until('the back-off to end', () => p.offer('n1', 'discovery'), 2000);
    await settled(5);
    expect(p.status().hosts[0]?.state).toBe('quarantined');
    // a startup event (the node was restarted) releases it and offers it
    const nc = await connect({ servers: url });
    cleanups.push(() => nc.close());
    const ev = {
      protocol: 'io.choria.lifecycle.v1.startup',
      id: 'q1',
      identity: 'n1',
      component: 'provision_mode_server',
      timestamp: Math.floor(Date.now() / 1000),
    };
    nc.publish('choria.lifecycle.event.startup.provision_mode_server', new TextEncoder().encode(JSON.stringify(ev)));
    await settled(6);
    expect(jobs).toHaveLength(6);
  });

  it('tells the next attempt that an earlier one configured the node but could not restart it, until the node boots again', async () => {
    const jobs: HostJob[] = [];
    const results: HostResult[] = [
      { outcome: 'failed', message: 'could not perform choria_provision#restart on n1: 3 tries', configured: true },
      { outcome: 'failed', message: 'could not perform choria_provision#restart on n1: 3 tries', configured: true },
      { outcome: 'failed', message: 'could not perform rpcutil#inventory on n1: 5 tries' },
      { outcome: 'failed', message: 'again' },
    ];
    const { p, url } = await setup(async (job) => {
      jobs.push(job);
      return results[jobs.length - 1] ?? { outcome: 'provisioned' };
    });
    const attempt = async (n: number, offer: () => unknown): Promise<HostJob | undefined> => {
      offer();
      await until(
        `attempt ${n} to finish`,
        () => jobs.length === n && p.status().busyWorkers === 0 && p.status().hostCounts['queued'] === undefined,
      );
      return jobs[n - 1];
    };
    expect((await attempt(1, () => p.offer('n1', 'discovery')))?.configuredAt).toBeUndefined();
    // the first attempt configured n1: the second is told so
    expect((await attempt(2, () => p.offer('n1', 'discovery')))?.configuredAt).toBeTypeOf('number');
    // so was the second; then n1 boots again (a startup event): whatever it had is no longer known
    const nc = await connect({ servers: url });
    cleanups.push(() => nc.close());
    const ev = {
      protocol: 'io.choria.lifecycle.v1.startup',
      id: 'e1',
      identity: 'n1',
      component: 'provision_mode_server',
      timestamp: Math.floor(Date.now() / 1000),
    };
    const third = await attempt(3, () =>
      nc.publish('choria.lifecycle.event.startup.provision_mode_server', new TextEncoder().encode(JSON.stringify(ev))),
    );
    expect(third?.configuredAt).toBeUndefined();
    // an attempt that failed before configuring leaves nothing to resume either
    expect((await attempt(4, () => p.offer('n1', 'discovery')))?.configuredAt).toBeUndefined();
  });

  it("hands a startup event's go-choria version to the attempt; discovery alone knows none", async () => {
    const jobs: HostJob[] = [];
    const { p, url } = await setup(async (job) => {
      jobs.push(job);
      return { outcome: 'failed', message: 'scripted' };
    });
    p.offer('n1', 'discovery');
    await until('the first attempt', () => jobs.length === 1 && p.status().busyWorkers === 0);
    expect(jobs[0]?.reportedVersion).toBeUndefined();
    const nc = await connect({ servers: url });
    cleanups.push(() => nc.close());
    const ev = {
      protocol: 'io.choria.lifecycle.v1.startup',
      id: 'e2',
      identity: 'n1',
      component: 'provision_mode_server',
      version: '0.24.1',
      timestamp: Math.floor(Date.now() / 1000),
    };
    nc.publish('choria.lifecycle.event.startup.provision_mode_server', new TextEncoder().encode(JSON.stringify(ev)));
    await until('the attempt after the startup event', () => jobs.length === 2 && p.status().busyWorkers === 0);
    expect(jobs[1]?.reportedVersion).toBe('0.24.1');
  });

  // An upgraded node comes back in provisioning mode and says so with a startup event; when that
  // event arrives before the attempt that upgraded it has ended, the node was on the list and the
  // event could not add it: the attempt's end adds it again, instead of the next discovery.
  it('a startup event that arrives while the node is being provisioned adds it again once the attempt ends', async () => {
    const jobs: HostJob[] = [];
    let url = '';
    const { p, url: brokerUrl } = await setup(async (job) => {
      jobs.push(job);
      if (jobs.length > 1) return { outcome: 'provisioned' };
      // release_update accepted; the node is back on the new version before this attempt ends
      const nc = await connect({ servers: url });
      const ev = {
        protocol: 'io.choria.lifecycle.v1.startup',
        id: 'u1',
        identity: 'n1',
        component: 'provision_mode_server',
        version: '0.30.0',
        timestamp: Math.floor(Date.now() / 1000),
      };
      nc.publish('choria.lifecycle.event.startup.provision_mode_server', new TextEncoder().encode(JSON.stringify(ev)));
      await nc.flush();
      await nc.close();
      // the event goes over loopback in about a millisecond; nothing the provisioner shows tells
      // when it has seen an event that could not add a node, so the attempt just lasts a while
      await new Promise((r) => setTimeout(r, 500));
      return { outcome: 'upgraded', message: 'updating to version 0.30.0' };
    });
    url = brokerUrl;
    expect(p.offer('n1', 'discovery')).toBe(true);
    await until('the attempt after the upgrade', () => jobs.length === 2 && p.status().busyWorkers === 0, 5000);
    expect(jobs[1]?.reportedVersion).toBe('0.30.0');
  });

  it('while paused, a startup event adds nothing: neither as it arrives nor when an attempt it came during ends', async () => {
    const jobs: HostJob[] = [];
    let url = '';
    const startup = async (identity: string): Promise<void> => {
      const nc = await connect({ servers: url });
      const ev = {
        protocol: 'io.choria.lifecycle.v1.startup',
        id: `p-${identity}-${jobs.length}`,
        identity,
        component: 'provision_mode_server',
        timestamp: Math.floor(Date.now() / 1000),
      };
      nc.publish('choria.lifecycle.event.startup.provision_mode_server', new TextEncoder().encode(JSON.stringify(ev)));
      await nc.flush();
      await nc.close();
    };
    let pauseNow: () => void = () => undefined;
    const {
      p,
      url: brokerUrl,
      registry,
    } = await setup(async (job) => {
      jobs.push(job);
      if (job.identity !== 'n1' || jobs.length > 1) return { outcome: 'provisioned' };
      // n1 starts again during its attempt, and the site is paused before the attempt ends
      await startup('n1');
      await new Promise((r) => setTimeout(r, 300));
      pauseNow();
      return { outcome: 'upgraded', message: 'updating' };
    });
    url = brokerUrl;
    pauseNow = () => p.pause();
    expect(p.offer('n1', 'discovery')).toBe(true);
    await until('the attempt ended', () => jobs.length === 1 && p.status().busyWorkers === 0 && p.paused, 5000);
    // and a startup event while paused
    await startup('n2');
    await new Promise((r) => setTimeout(r, 500));
    expect(jobs.map((j) => j.identity)).toEqual(['n1']);
    expect(p.status().queue).toBe(0);
    expect(p.status().hosts.filter((h) => h.state === 'queued' || h.state === 'provisioning')).toEqual([]);
    // (a node added while paused would be dropped by its worker at once: the count says it was not added)
    expect(await registry.metrics()).toContain('choria_provisioner_event_discovered{site="test"} 0');
    // resumed: the next startup event adds its node
    p.resume();
    await startup('n2');
    await until('n2 provisioned', () => jobs.some((j) => j.identity === 'n2'), 5000);
    expect(await registry.metrics()).toContain('choria_provisioner_event_discovered{site="test"} 1');
  });

  it('queues an identity once, holds it after success, then forgets it', async () => {
    const runs: string[] = [];
    const { p, registry } = await setup(
      async (job) => {
        runs.push(job.identity);
        job.onStep('configure');
        return { outcome: 'provisioned' };
      },
      { holdMs: 1200 },
    );
    expect(p.offer('n1', 'discovery')).toBe(true);
    expect(p.offer('n1', 'event')).toBe(false);
    await until('the first run', () => runs.length === 1);
    expect(p.offer('n1', 'discovery')).toBe(false); // held
    expect(p.status().hosts[0]).toMatchObject({ identity: 'n1', state: 'held', attempts: 1 });
    await until('the hold to end', () => p.status().hostCounts['held'] === undefined, 4000);
    expect(p.status().hosts[0]).toMatchObject({ identity: 'n1', state: 'provisioned' });
    expect(p.offer('n1', 'discovery')).toBe(true);
    await until('the second run', () => runs.length === 2);
    const text = await registry.metrics();
    expect(text).toContain('choria_provisioner_discovered{site="test"} 2');
    expect(text).toContain('choria_provisioner_provisioned{site="test"} 2');
  });

  it('starts on the first node a discovery finds while that discovery is still waiting for more', async () => {
    const started = new Map<string, number>();
    // a fleet that answers at once for one node and 150 ms later for another (within the 300 ms
    // quiet window): the discovery ends 300 ms after that, ~450 ms in
    const p = await discoveringSetup(
      (send) => {
        send('early.example.net');
        setTimeout(() => send('late.example.net'), 150);
      },
      async (job) => {
        started.set(job.identity, performance.now());
        return { outcome: 'provisioned' };
      },
      2,
    );
    await p.start();
    // start() began the first discovery; this call shares it
    const added = await p.discover();
    const discoveryEndedAt = performance.now();
    expect(added).toBe(2);
    // the early node was started right away, not when the quiet window after the late one ran out
    expect(discoveryEndedAt - (started.get('early.example.net') ?? Infinity)).toBeGreaterThan(200);
    await until('the late node to be started', () => started.size === 2);
    expect([...started.keys()].sort()).toEqual(['early.example.net', 'late.example.net']);
  });

  it('listens for the whole discovery while offering as found: a node that answers after a quiet spell is found by the same discovery', async () => {
    const started: string[] = [];
    // the second answer comes 1 s after the first, far beyond the 300 ms quiet window
    const p = await discoveringSetup(
      (send) => {
        send('prompt.example.net');
        setTimeout(() => send('slow.example.net'), 1000);
      },
      async (job) => {
        started.push(job.identity);
        return { outcome: 'provisioned' };
      },
      2,
    );
    const t0 = performance.now();
    await p.start();
    expect(await p.discover()).toBe(2);
    // the discovery ran to its 2 s limit
    expect(performance.now() - t0).toBeGreaterThanOrEqual(1900);
    await until('both nodes to be started', () => started.length === 2);
    expect(started.sort()).toEqual(['prompt.example.net', 'slow.example.net']);
  });

  it('offers a burst of discovery replies a few dozen at a time, leaving the event loop to other messages in between', async () => {
    const count = 2000;
    const p = await discoveringSetup(
      (send) => {
        for (let i = 0; i < count; i++) send(`burst-${i}.example.net`);
      },
      (job) =>
        new Promise((resolve) =>
          job.signal.addEventListener('abort', () => resolve({ outcome: 'failed', message: 'stopped' })),
        ),
      1,
    );
    // how many nodes joined the list from one turn of the event loop to the next
    const listed = (): number => Object.values(p.status({ limit: 0 }).hostCounts).reduce((a, n) => a + n, 0);
    let last = 0;
    let largestStep = 0;
    let sampling = true;
    const sample = (): void => {
      const offers = listed();
      largestStep = Math.max(largestStep, offers - last);
      last = offers;
      if (sampling) setImmediate(sample);
    };
    sample();
    await p.start();
    expect(await p.discover()).toBe(count);
    sampling = false;
    sample(); // the last batch may have joined in the turn the discovery ended
    expect(last).toBe(count);
    expect(largestStep).toBeLessThanOrEqual(100);
  });

  it('drops failed, deferred and locked nodes at once so the next discovery retries them; counts each outcome', async () => {
    const outcomes: HostResult[] = [
      { outcome: 'failed', message: 'could not perform rpcutil#inventory on f: 5 tries, last: timed out' },
      { outcome: 'deferred', message: 'configuration defered by the helper', helperMessage: 'later' },
      { outcome: 'skipped_locked', message: 'locked' },
    ];
    const { p, registry } = await setup(async (job) => outcomes[Number(job.identity.slice(1))] as HostResult);
    for (const id of ['n0', 'n1', 'n2']) p.offer(id, 'discovery');
    await until(
      'all three attempts to end',
      () =>
        p.status().hostCounts['queued'] === undefined &&
        p.status().busyWorkers === 0 &&
        p.status().hosts.length === 3 &&
        p.status().hosts.every((h) => !['queued', 'provisioning'].includes(h.state)),
    );
    const byId = Object.fromEntries(p.status().hosts.map((h) => [h.identity, h]));
    expect(byId['n0']).toMatchObject({
      state: 'failed',
      lastError: 'could not perform rpcutil#inventory on f: 5 tries, last: timed out',
    });
    expect(byId['n1']).toMatchObject({ state: 'deferred' });
    expect(byId['n2']).toMatchObject({ state: 'skipped_locked' });
    for (const id of ['n0', 'n1', 'n2']) expect(p.offer(id, 'discovery')).toBe(true);
    const text = await registry.metrics();
    expect(text).toContain('choria_provisioner_provision_errors{site="test"} 2');
    expect(text).toContain('choria_provisioner_outcomes{site="test",outcome="skipped_locked"} 1');
    expect(text).toContain('choria_provisioner_outcomes{site="test",outcome="deferred"} 1');
  });

  it('pages, filters, searches and sorts its nodes for /nodes, describing only the page, and counts finished nodes per slot', async () => {
    const { p } = await setup(
      async (job) =>
        job.identity.startsWith('bad')
          ? { outcome: 'failed', message: `no CMDB record for ${job.identity}` }
          : { outcome: 'provisioned' },
      { workers: 4 },
    );
    const ids = ['web-03', 'web-01', 'bad-2', 'web-02', 'bad-1', 'db-01'];
    for (const id of ids) p.offer(id, 'discovery');
    await until(
      'every attempt',
      () =>
        p.status().busyWorkers === 0 &&
        p.status().queue === 0 &&
        p.status().hosts.every((h) => h.state === 'held' || h.state === 'failed'),
    );
    const page = (q: Partial<Parameters<Provisioner['nodes']>[0]>) =>
      p.nodes({ sort: 'identity', order: 'asc', offset: 0, limit: 100, ...q });
    expect(page({}).nodes.map((n) => n.identity)).toEqual(['bad-1', 'bad-2', 'db-01', 'web-01', 'web-02', 'web-03']);
    expect(page({ order: 'desc', limit: 2 })).toMatchObject({
      site: 'test',
      total: 6,
      offset: 0,
      limit: 2,
      nodes: [{ identity: 'web-03' }, { identity: 'web-02' }],
    });
    expect(page({ offset: 4, limit: 10 }).nodes.map((n) => n.identity)).toEqual(['web-02', 'web-03']);
    const failed = page({ state: 'failed' });
    expect(failed.total).toBe(2);
    expect(failed.nodes[0]).toMatchObject({
      identity: 'bad-1',
      state: 'failed',
      lastError: 'no CMDB record for bad-1',
      attempts: 1,
    });
    expect(page({ search: 'WEB-0' }).nodes.map((n) => n.identity)).toEqual(['web-01', 'web-02', 'web-03']);
    expect(page({ search: 'nothing' })).toMatchObject({ total: 0, nodes: [] });
    // by state: failed before held, ties by identity
    expect(
      page({ sort: 'state' })
        .nodes.map((n) => `${n.state}:${n.identity}`)
        .slice(0, 3),
    ).toEqual(['failed:bad-1', 'failed:bad-2', 'held:db-01']);
    // nodes without an error sort after those with one
    expect(
      page({ sort: 'lastError' })
        .nodes.map((n) => n.identity)
        .slice(0, 2),
    ).toEqual(['bad-1', 'bad-2']);
    // also in descending order: the errors, last first, then the nodes without one
    expect(page({ sort: 'lastError', order: 'desc' }).nodes.map((n) => n.identity)).toEqual([
      'bad-2',
      'bad-1',
      'web-03',
      'web-02',
      'web-01',
      'db-01',
    ]);
    const recent = p.status({ limit: 0 }).recent;
    expect(recent.slotMs).toBe(10_000);
    expect(recent.provisioned.reduce((a, n) => a + n, 0)).toBe(4);
    expect(recent.failed.reduce((a, n) => a + n, 0)).toBe(2);
    expect(p.status({ limit: 0 }).hosts).toEqual([]);
  });

  it('while paused ignores discovery and drops queued work; resumes cleanly', async () => {
    let release: (() => void) | undefined;
    const runs: string[] = [];
    const { p, registry } = await setup(
      async (job) => {
        runs.push(job.identity);
        if (job.identity === 'slow') await new Promise<void>((r) => (release = r));
        return { outcome: 'provisioned' };
      },
      { workers: 1 },
    );
    p.offer('slow', 'discovery');
    await until('the first run', () => runs.length === 1);
    p.offer('queued-1', 'discovery');
    p.pause();
    expect(await p.discover()).toBe(0);
    expect(await registry.metrics()).toContain('choria_provisioner_paused{site="test"} 1');
    release?.();
    await until('an idle provisioner', () => p.status().queue === 0 && p.status().busyWorkers === 0);
    expect(runs).toEqual(['slow']);
    p.resume();
    expect(p.offer('queued-1', 'discovery')).toBe(true);
    await until('the second run', () => runs.length === 2);
  });

  it('stop() aborts in-flight work through its signal and resolves within the bound', async () => {
    let aborted = false;
    const { p } = await setup(
      (job) =>
        new Promise<HostResult>((resolve) => {
          job.signal.addEventListener('abort', () => {
            aborted = true;
            resolve({ outcome: 'failed', message: 'cancelled' });
          });
        }),
    );
    p.offer('n1', 'discovery');
    await until('one busy worker', () => p.status().busyWorkers === 1);
    const t = Date.now();
    await p.stop();
    expect(aborted).toBe(true);
    expect(Date.now() - t).toBeLessThan(2000);
  });

  it('a stop() while start() is still under way: start() goes no further, and the provisioner stays stopped', async () => {
    const srv = await startNatsServer({ jetstream: false });
    cleanups.push(() => srv.stop());
    for (const store of ['memory', 'kv']) {
      const config = testConfig(`history_store: ${store}\n`);
      const client = await testClient(testSettings(srv.url, config));
      cleanups.push(() => client.close());
      let offered = 0;
      const p = new Provisioner({
        config,
        choria: testSettings(srv.url, config),
        client,
        hostRunner: async () => ({ outcome: 'provisioned' }),
        helper: () => ({}),
        stopTimeoutMs: 2000,
      });
      // every interval armed from here on must be cleared by the time both have returned: one
      // left armed (discovery, the sweep, the history bucket's retry) keeps the process alive
      const armed = vi.spyOn(globalThis, 'setInterval');
      const cleared = vi.spyOn(globalThis, 'clearInterval');
      try {
        // start() runs to its first await (publishing the startup event); stop() begins there
        const started = p.start();
        await p.stop();
        await started;
        const left = armed.mock.results
          .map((r) => r.value as unknown)
          .filter((handle) => !cleared.mock.calls.some(([c]) => c === handle));
        expect(left, `intervals left armed with history_store ${store}`).toEqual([]);
      } finally {
        armed.mockRestore();
        cleared.mockRestore();
      }
      expect(p.readiness(), `history_store ${store}`).toMatchObject({ ready: false, reason: 'stopped' });
      offered += p.offer('n1', 'discovery') ? 1 : 0;
      expect(offered, `history_store ${store}`).toBe(0);
    }
  });

  it('status() reports the instance and the step a host is on', async () => {
    let release: (() => void) | undefined;
    const { p } = await setup(
      async (job) => {
        job.onStep('helper');
        await new Promise<void>((r) => (release = r));
        return { outcome: 'provisioned' };
      },
      { workers: 1 },
    );
    p.offer('a', 'discovery');
    p.offer('b', 'event');
    await until('one busy worker', () => p.status().busyWorkers === 1);
    const st = p.status();
    expect(st).toMatchObject({
      site: 'test',
      identity: 'provisioner.example.net',
      connected: true,
      paused: false,
      queue: 1,
      queueCapacity: 50_000,
      busyWorkers: 1,
      workers: 1,
      leaderElection: false,
    });
    expect(st.hosts.find((h) => h.identity === 'a')).toMatchObject({
      state: 'provisioning',
      step: 'helper',
      attempts: 1,
      source: 'discovery',
    });
    expect(st.hosts.find((h) => h.identity === 'b')).toMatchObject({ state: 'queued', source: 'event' });
    release?.();
  });
});

describe('Provisioner with a process helper from its configuration', () => {
  it('starts the helper spawner with itself and logs which one starts the helpers', async () => {
    const srv = await startNatsServer({ jetstream: false });
    cleanups.push(() => srv.stop());
    const { logger, entries } = capturingLogger();
    const config = testConfig('helper: /bin/true\n');
    const p = new Provisioner({
      config,
      choria: testSettings(srv.url, config),
      registry: new Registry(),
      logger,
      stopTimeoutMs: 2000,
    });
    cleanups.push(() => p.stop());
    await p.start();
    // no node has come: the notice is the warm-up's (the default spawner, though this machine has python3)
    await until(
      'the spawner notice',
      () => entries.some((e) => e.message.startsWith('helper processes are started by')),
      5000,
    );
    expect(entries.find((e) => e.message.startsWith('helper processes are started by'))).toMatchObject({
      level: 'info',
      message: 'helper processes are started by the node spawner',
    });
  });
});

// The Provisioner scheduler end to end (issue: Provisioner class) on real nats-servers with the
// simulator: discovery at scale, startup events, leader election failover, two sites in one
// process, a broker restart and a full queue.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedFleet, type FleetOptions } from '../../packages/simulator/src/index.js';
import { Provisioner } from '../../packages/core/src/provisioner/provisioner.js';
import type { ProvisionerOptions } from '../../packages/core/src/provisioner/options.js';
import type { HelperFunction } from '../../packages/core/src/host/helper/types.js';
import {
  addElectionBucket,
  freePort,
  provisioningLogin,
  startNatsServer,
  type RunningNatsServer,
} from '@choria-provisioner/test-support/nats-server';
import { testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { sleep, until } from '@choria-provisioner/test-support/wait';
import { expectExactlyOnce, expectProvisionedOnce } from '@choria-provisioner/test-support/fleet';
import { connect } from 'nats';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function broker(jetstream = false): Promise<RunningNatsServer> {
  const s = await startNatsServer({ jetstream });
  cleanups.push(() => s.stop());
  return s;
}

async function startFleet(url: string, opts: Partial<FleetOptions>): Promise<SimulatedFleet> {
  const f = await SimulatedFleet.start({
    servers: [url],
    count: 10,
    token: 's3cret',
    timeScale: 0.01,
    control: false,
    eventFormat: 'none',
    ...opts,
  });
  cleanups.push(() => f.stop());
  return f;
}

const helper: HelperFunction = (req) => ({
  configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' },
});

function provisioner(
  url: string,
  yaml: string,
  opts: Partial<ProvisionerOptions> = {},
  identity = 'provisioner.example.net',
): Provisioner {
  const config = testConfig(yaml);
  const p = new Provisioner({ config, choria: testSettings(url, config, identity), helper, ...opts });
  cleanups.push(() => p.stop());
  return p;
}

describe('Provisioner end to end', () => {
  it('provisions 500 nodes found by discovery exactly once', async () => {
    const s = await broker();
    const fleet = await startFleet(s.url, { count: 500 });
    await fleet.waitForBooted(20_000);
    const registry = new Registry();
    const p = provisioner(s.url, 'workers: 32\n', { registry });
    await p.start();
    await fleet.waitForAllProvisioned(60_000);
    expectExactlyOnce(fleet);
    const text = await registry.metrics();
    expect(text).toContain('choria_provisioner_provisioned{site="test"} 500');
    expect(text).toContain('choria_provisioner_discovered{site="test"} 500');
    expect(text).toContain('choria_provisioner_outcomes{site="test",outcome="provisioned"} 500');
    const st = p.status();
    expect(st.connected).toBe(true);
    expect(st.hostCounts['held']).toBe(500);
    expect(st.hosts[0]?.state).toBe('held');
  }, 90_000);

  it('provisions nodes that boot later from their startup events, before the next discovery', async () => {
    const s = await broker();
    const registry = new Registry();
    const p = provisioner(s.url, 'interval: 10m\n', { registry });
    await p.start();
    await sleep(300); // the start-up discovery finds nothing
    const fleet = await startFleet(s.url, { count: 50, eventFormat: 'cloudevents', bootSpreadMs: 1000 });
    await fleet.waitForAllProvisioned(30_000);
    expectExactlyOnce(fleet);
    expect(await registry.metrics()).toContain('choria_provisioner_event_discovered{site="test"} 50');
  }, 60_000);

  it('ignores garbage lifecycle events and counts them', async () => {
    const s = await broker();
    const registry = new Registry();
    const p = provisioner(s.url, '', { registry });
    await p.start();
    const nc = await connect({ servers: s.url, ...provisioningLogin(s) });
    for (let i = 0; i < 50; i++)
      nc.publish(
        'choria.lifecycle.event.startup.provision_mode_server',
        new TextEncoder().encode(i % 2 ? 'not json' : '{"protocol":"bogus"}'),
      );
    await nc.flush();
    await nc.close();
    await until(
      'event errors counted',
      async () => (await registry.metrics()).includes('choria_provisioner_event_errors{site="test"} 50'),
      5000,
    );
    expect(p.status().hosts).toEqual([]);
  });

  it('with leader election only the leader provisions; when it dies the standby takes over and finishes', async () => {
    const s = await broker(true);
    await addElectionBucket(s.url);
    const fleet = await startFleet(s.url, { count: 120, latencyMs: 15, lockMs: 3000 });
    await fleet.waitForBooted(20_000);
    const yaml = 'leader_election: true\nstreams_api_prefix: $JS.API\nworkers: 2\n';
    const a = provisioner(s.url, yaml, { electionSplayMs: 10 }, 'prov-a.example.net');
    const b = provisioner(s.url, yaml, { electionSplayMs: 400 }, 'prov-b.example.net');
    await a.start();
    await b.start();
    await until('a leader', () => a.isLeader === true || b.isLeader === true, 15_000);
    const [leader, standby] = a.isLeader === true ? [a, b] : [b, a];
    await until('some nodes provisioned', () => fleet.countByState().provisioned >= 20, 30_000);
    expect(standby.paused).toBe(true);
    // the standby works on nothing; what it shows is the leader's work, from the shared history
    await until(
      "the leader's records at the standby",
      () => (standby.status().hostCounts['provisioned'] ?? 0) >= 20,
      10_000,
    );
    // ... and the nodes it is configuring right now: configure and restart are recorded before they are sent
    expect(
      Object.keys(standby.status().hostCounts).filter((state) => state !== 'provisioned' && state !== 'provisioning'),
    ).toEqual([]);
    expect(standby.status().hosts.every((h) => h.instance === leader.choria.identity)).toBe(true);
    await leader.stop(); // like a crash: the election key is not released
    await until('the standby to lead', () => standby.isLeader === true, 20_000);
    await until('the whole fleet', () => fleet.countByState().provisioned === 120, 60_000, {
      tick: () => standby.discover(),
      stepMs: 100,
    });
    expectProvisionedOnce(fleet);
  }, 120_000);

  it('runs two sites in one process on two brokers with one metrics registry', async () => {
    const [s1, s2] = [await broker(), await broker()];
    const [f1, f2] = [
      await startFleet(s1.url, { count: 40, name: 'one' }),
      await startFleet(s2.url, { count: 30, name: 'two' }),
    ];
    await Promise.all([f1.waitForBooted(10_000), f2.waitForBooted(10_000)]);
    const registry = new Registry();
    const p1 = provisioner(s1.url, 'site: lon\n', { registry });
    const p2 = provisioner(s2.url, 'site: nyc\n', { registry });
    await Promise.all([p1.start(), p2.start()]);
    await Promise.all([f1.waitForAllProvisioned(30_000), f2.waitForAllProvisioned(30_000)]);
    expectExactlyOnce(f1);
    expectExactlyOnce(f2);
    const text = await registry.metrics();
    expect(text).toContain('choria_provisioner_provisioned{site="lon"} 40');
    expect(text).toContain('choria_provisioner_provisioned{site="nyc"} 30');
  }, 60_000);

  it('keeps retrying a site whose broker is down without holding up another site, and stops promptly', async () => {
    const s = await broker();
    const fleet = await startFleet(s.url, { count: 10 });
    await fleet.waitForBooted(10_000);
    const down = provisioner(`nats://127.0.0.1:${await freePort()}`, 'site: down\n');
    const up = provisioner(s.url, 'site: up\n');
    const downStarted = down.start();
    await up.start();
    await fleet.waitForAllProvisioned(20_000);
    expect(down.status().connected).toBe(false);
    const t = Date.now();
    await down.stop();
    await downStarted;
    expect(Date.now() - t).toBeLessThan(2000);
  }, 60_000);

  it('loses no node when the broker restarts mid-run', async () => {
    const s = await broker();
    const fleet = await startFleet(s.url, { count: 150, latencyMs: 20 });
    await fleet.waitForBooted(20_000);
    const p = provisioner(s.url, 'workers: 4\n');
    await p.start();
    await until('some progress', () => fleet.countByState().provisioned >= 10, 30_000);
    await s.restart();
    await until('every node provisioned', () => fleet.countByState().provisioned === 150, 90_000, {
      tick: async () => {
        if (p.status().queue === 0 && p.status().busyWorkers === 0) await p.discover();
      },
      stepMs: 100,
    });
    expectProvisionedOnce(fleet);
  }, 120_000);

  it('degrades with a warning when the work queue is full, and still finishes', async () => {
    const s = await broker();
    const fleet = await startFleet(s.url, { count: 30, latencyMs: 10 });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    const p = provisioner(s.url, 'workers: 1\n', { registry, queueCapacity: 5 });
    await p.start();
    await until(
      'queue-full counted',
      async () => /choria_provisioner_queue_full\{site="test"\} [1-9]/.test(await registry.metrics()),
      10_000,
    );
    await until('every node provisioned', () => fleet.countByState().provisioned === 30, 60_000, {
      tick: async () => {
        if (p.status().queue === 0) await p.discover();
      },
      stepMs: 100,
    });
    expectExactlyOnce(fleet);
  }, 90_000);
});

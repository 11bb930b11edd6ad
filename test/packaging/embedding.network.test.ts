// The embedding example (examples/embedding/two-sites.ts) run for real: two nats-servers, two simulated
// fleets, two sites in this process with in-process helpers and one shared registry and monitor.
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '@choria-provisioner/core';
import { SimulatedFleet } from '@choria-provisioner/simulator';
import { runTwoSites, type RunningSites } from '../../examples/embedding/two-sites.js';
import { startNatsServer } from '@choria-provisioner/test-support/nats-server';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function brokerWithFleet(name: string): Promise<{ url: string; fleet: SimulatedFleet }> {
  const server = await startNatsServer({ jetstream: false });
  cleanups.push(() => server.stop());
  const fleet = await SimulatedFleet.start({
    servers: [server.url],
    count: 10,
    name,
    identityPattern: `${name}-{i}.example.net`,
    token: 's3cret',
    timeScale: 0.01,
    control: false,
    eventFormat: 'none',
  });
  cleanups.push(() => fleet.stop());
  await fleet.waitForBooted(10_000);
  return { url: server.url, fleet };
}

function expectProvisionedOnceInto(fleet: SimulatedFleet, site: string): void {
  const report = fleet.report();
  expect(report.totals.violations, JSON.stringify(report.totals.violationsByKind)).toBe(0);
  expect(report.nodes).toHaveLength(10);
  for (const node of report.nodes) {
    expect(node.state).toBe('provisioned');
    expect([node.configuredCount, node.restartCount]).toEqual([1, 1]);
    expect(node.configuration?.['plugin.choria.middleware_hosts']).toBe(`nats://broker.${site}.example.net:4222`);
    expect(node.configuration?.['identity']).toBe(node.identity);
  }
}

describe('examples/embedding/two-sites.ts', () => {
  it('provisions two fleets on two brokers from one process, with one registry and one /status for both sites', async () => {
    const [lon, nyc] = [await brokerWithFleet('lon'), await brokerWithFleet('nyc')];
    const running: RunningSites = await runTwoSites({
      sites: [
        { site: 'lon', broker: lon.url, token: 's3cret', workers: 3 },
        { site: 'nyc', broker: nyc.url, token: 's3cret', workers: 3 },
      ],
      logger: silentLogger(),
      monitor: { port: 0, host: '127.0.0.1' },
    });
    cleanups.push(() => running.stop());

    await Promise.all([lon.fleet.waitForAllProvisioned(20_000), nyc.fleet.waitForAllProvisioned(20_000)]);
    expectProvisionedOnceInto(lon.fleet, 'lon');
    expectProvisionedOnceInto(nyc.fleet, 'nyc');

    const metrics = await (await fetch(`${running.monitor?.url ?? 'http://monitor-not-started'}/metrics`)).text();
    for (const site of ['lon', 'nyc']) {
      expect(metrics).toContain(`choria_provisioner_provisioned{site="${site}"} 10`);
      expect(metrics).toContain(`choria_provisioner_discovered{site="${site}"} 10`);
      expect(metrics).toContain(`choria_provisioner_outcomes{site="${site}",outcome="provisioned"} 10`);
      expect(metrics).toMatch(new RegExp(`choria_provisioner_helper_time_count\\{site="${site}"\\} 10\\n`));
    }
    // the default registry of the example also carries the Node.js process metrics
    expect(metrics).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(await running.registry.metrics()).toContain('choria_provisioner_provisioned{site="nyc"} 10');

    const status = (await (await fetch(`${running.monitor?.url ?? ''}/status`)).json()) as {
      sites: { site: string; hostCounts: Record<string, number> }[];
    };
    expect(status.sites.map((s) => [s.site, s.hostCounts['held']])).toEqual([
      ['lon', 10],
      ['nyc', 10],
    ]);

    await running.stop();
    expect(running.provisioners.map((p) => p.status().connected)).toEqual([false, false]);
  }, 60_000);

  it('refuses two sites with the same name before connecting anywhere', async () => {
    const site = { site: 'same', broker: 'nats://127.0.0.1:1', token: 'x' };
    await expect(runTwoSites({ sites: [site, site], logger: silentLogger() })).rejects.toThrow(
      'both sites are called "same"',
    );
  });
});

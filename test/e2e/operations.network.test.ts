// Operations end to end: a node whose CSR is always refused is quarantined after quarantine_after
// attempts, shows so in /status and the metrics, and is released through the monitor port's API.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { controlProvisioners, startMonitorServer } from '../../packages/core/src/index.js';
import { FleetHarness, discoverWhenIdle, metricValue } from '@choria-provisioner/test-support/fleet';
import { until } from '@choria-provisioner/test-support/wait';

const h = new FleetHarness();
afterEach(() => h.cleanup());

describe('operations', () => {
  it('a dry run fetches, checks and runs the helper for every node but leaves every node waiting and unchanged', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 10, eventFormat: 'none' });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    const helped: string[] = [];
    const p = h.provisioner(s.url, 'workers: 4\n', {
      registry,
      dryRun: true,
      helper: (req) => {
        helped.push(req.identity);
        return {
          configuration: {
            identity: req.identity,
            'plugin.choria.server.provision': 'false',
            'plugin.choria.middleware_hosts': 'nats://secret-broker.example.net:4222',
          },
        };
      },
    });
    await p.start();
    await until(
      'every node dry-run',
      async () => (await metricValue(registry, 'choria_provisioner_outcomes', { outcome: 'dry_run' })) === 10,
      20_000,
    );
    expect(helped.sort()).toEqual(fleet.identities().sort());
    const r = fleet.report();
    expect(r.totals.violations).toBe(0);
    for (const n of r.nodes) {
      expect(n.state, n.identity).toBe('waiting');
      expect([n.configuredCount, n.restartCount, n.shutdownCount, n.updateCount]).toEqual([0, 0, 0, 0]);
      expect(Object.keys(n.rpcCounts).sort()).toEqual(['discovery', 'rpcutil#inventory']);
    }
    const st = p.status();
    expect(st.dryRun).toBe(true);
    const first = st.hosts.find((x) => x.identity === 'node-1.example.net');
    expect(first?.state).toBe('dry_run');
    expect(first?.lastError).toBe(
      'dry run: would send choria_provision#configure with 3 settings (identity, plugin.choria.middleware_hosts, plugin.choria.server.provision), then choria_provision#restart',
    );
    expect(JSON.stringify(st)).not.toContain('secret-broker');
    expect(await metricValue(registry, 'choria_provisioner_provision_errors')).toBe(0);
  }, 60_000);

  it('quarantines a node whose CSR is always refused and releases it through the API', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 6, eventFormat: 'none' });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    // node-3's common name is on the deny list: every attempt fails at the CSR check
    const yaml =
      'workers: 2\nfeatures:\n  pki: true\ncert_deny_list: ["^node-3\\\\."]\nquarantine_after: 2\nmonitor_api_token: op-t0ken\n';
    const p = h.provisioner(s.url, yaml, { registry });
    await p.start();
    const monitor = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      control: (req) => controlProvisioners([p], req),
      status: () => ({ sites: [p.status()] }),
    });
    h.onCleanup(() => monitor.close());
    const node3 = () => p.status({ limit: 100 }).hosts.find((x) => x.identity === 'node-3.example.net');
    await until(
      'the others provisioned and node-3 quarantined',
      () => fleet.countByState().provisioned === 5 && node3()?.state === 'quarantined',
      30_000,
      {
        tick: () => discoverWhenIdle(p),
        stepMs: 100,
      },
    );
    expect(node3()).toMatchObject({
      state: 'quarantined',
      attempts: 2,
      failures: 2,
      lastError: expect.stringMatching(/matches denied certificate pattern/),
    });
    await until(
      'the quarantine gauge (updated every second)',
      async () => (await metricValue(registry, 'choria_provisioner_quarantined_nodes')) === 1,
      3000,
    );
    // quarantined: discoveries do not bring it back
    for (let i = 0; i < 3; i++) await p.discover();
    await new Promise((r) => setTimeout(r, 300));
    expect(node3()?.attempts).toBe(2);

    const released = await fetch(`${monitor.url}/nodes/node-3.example.net/release`, {
      method: 'POST',
      headers: { authorization: 'Bearer op-t0ken' },
    });
    expect(released.status).toBe(200);
    expect(await released.json()).toEqual({ sites: [{ site: 'test', result: 'released node-3.example.net' }] });
    await until('node-3 tried again after the release', () => (node3()?.attempts ?? 0) === 3, 10_000, {
      tick: () => discoverWhenIdle(p),
      stepMs: 100,
    });
    await until(
      'the gauge follows',
      async () => (await metricValue(registry, 'choria_provisioner_quarantined_nodes')) === 0,
    );
  }, 60_000);
});

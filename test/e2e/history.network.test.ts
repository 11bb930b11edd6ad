// The node history end to end, in a JetStream bucket on a real nats-server: a provisioner started
// again (after a broker restart too) shows what the one before it did and keeps its quarantine;
// two active/active instances of one site show one history and share each other's quarantines.
import { afterEach, describe, expect, it } from 'vitest';
import { FleetHarness, discoverWhenIdle } from '@choria-provisioner/test-support/fleet';
import { until } from '@choria-provisioner/test-support/wait';
import type { HostStatus, Provisioner } from '../../packages/core/src/index.js';

const h = new FleetHarness();
afterEach(() => h.cleanup());

// node-3's common name is on the deny list: every attempt fails at the CSR check
const DENY_NODE_3 = 'features:\n  pki: true\ncert_deny_list: ["^node-3\\\\."]\nquarantine_after: 2\nhistory_ttl: 1h\n';
const NODE_3 = 'node-3.example.net';

const byIdentity = (p: Provisioner): Map<string, HostStatus> =>
  new Map(p.status({ limit: 1000 }).hosts.map((x) => [x.identity, x]));
/** held: provisioned, and kept on the list through the node's restart */
const outcomeOf = (x: HostStatus | undefined): string | undefined => (x?.state === 'held' ? 'provisioned' : x?.state);
/** every node of the fleet known, node-3 quarantined and the rest provisioned */
const settled = (p: Provisioner, count: number): boolean => {
  const hosts = byIdentity(p);
  return (
    hosts.size === count &&
    [...hosts.values()].every((x) => outcomeOf(x) === (x.identity === NODE_3 ? 'quarantined' : 'provisioned'))
  );
};

describe('node history in a key-value bucket', () => {
  it('a restarted provisioner shows the history of the nodes provisioned before, even after a broker restart, and keeps their quarantine', async () => {
    const s = await h.broker({ jetstream: true });
    const fleet = await h.fleet(s.url, { count: 12 });
    await fleet.waitForBooted(10_000);
    const first = h.provisioner(s.url, `workers: 3\n${DENY_NODE_3}`, { identity: 'prov-a.example.net' });
    await first.start();
    expect(first.status().history).toMatchObject({
      store: 'kv',
      bucket: 'CHORIA_PROVISIONER_HISTORY',
      ttlMs: 3_600_000,
    });
    await until(
      '11 provisioned and node-3 quarantined',
      () => fleet.countByState().provisioned === 11 && byIdentity(first).get(NODE_3)?.state === 'quarantined',
      30_000,
      {
        tick: () => discoverWhenIdle(first),
        stepMs: 100,
      },
    );
    const before = byIdentity(first);
    await first.stop();
    const node3Rpcs = (): number =>
      fleet.report().nodes.find((n) => n.identity === NODE_3)?.rpcCounts['choria_provision#gencsr'] ?? 0;
    const csrRequests = node3Rpcs();
    expect(csrRequests).toBe(2);

    await s.restart(); // kill -9: the bucket is in the file store
    const second = h.provisioner(s.url, `workers: 3\n${DENY_NODE_3}`, { identity: 'prov-a.example.net' });
    await second.start();
    const after = byIdentity(second);
    expect(second.status().history).toMatchObject({ store: 'kv', nodes: 12, pendingWrites: 0 });
    expect([...after.keys()].sort()).toEqual(fleet.identities().sort());
    for (const id of fleet.identities()) {
      const was = before.get(id);
      const is = after.get(id);
      expect(is, id).toMatchObject({
        state: outcomeOf(was),
        attempts: was?.attempts,
        instance: 'prov-a.example.net',
        firstSeen: was?.firstSeen,
        lastAttemptMs: was?.lastAttemptMs,
      });
      if (id !== NODE_3) expect(is?.provisionedAt, id).toBe(was?.provisionedAt);
    }
    expect(after.get(NODE_3)).toMatchObject({
      state: 'quarantined',
      failures: 2,
      lastError: expect.stringMatching(/matches denied certificate pattern/),
    });
    // still quarantined for the new process: discoveries do not bring node-3 back
    for (let i = 0; i < 3; i++) await second.discover();
    await new Promise((r) => setTimeout(r, 500));
    expect(node3Rpcs()).toBe(csrRequests);
    expect(second.status().hostCounts).toEqual({ provisioned: 11, quarantined: 1 });
  }, 90_000);

  it('two active/active instances of one site see the same history, and a quarantine one of them made holds for both', async () => {
    const s = await h.broker({ jetstream: true });
    const fleet = await h.fleet(s.url, { count: 24 });
    await fleet.waitForBooted(10_000);
    const yaml = `workers: 3\ncoordination: active_active\ncoordination_heartbeat: 200ms\n${DENY_NODE_3}`;
    const a = h.provisioner(s.url, yaml, { identity: 'prov-a.example.net' });
    const b = h.provisioner(s.url, yaml, { identity: 'prov-b.example.net' });
    await Promise.all([a.start(), b.start()]);
    const both = async (): Promise<void> => {
      await discoverWhenIdle(a);
      await discoverWhenIdle(b);
    };
    await until(
      'both to show 23 provisioned and node-3 quarantined',
      () => fleet.countByState().provisioned === 23 && settled(a, 24) && settled(b, 24),
      45_000,
      { tick: both, stepMs: 100 },
    );
    const [ha, hb] = [byIdentity(a), byIdentity(b)];
    expect([...ha.keys()].sort()).toEqual(fleet.identities().sort());
    for (const id of fleet.identities()) {
      const [x, y] = [ha.get(id), hb.get(id)];
      expect(
        {
          attempts: y?.attempts,
          instance: y?.instance,
          firstSeen: y?.firstSeen,
          provisionedAt: y?.provisionedAt,
          state: outcomeOf(y),
        },
        id,
      ).toEqual({
        attempts: x?.attempts,
        instance: x?.instance,
        firstSeen: x?.firstSeen,
        provisionedAt: x?.provisionedAt,
        state: outcomeOf(x),
      });
    }
    // the work was shared, and each instance shows the other's
    const instances = new Set([...ha.values()].map((x) => x.instance));
    expect(instances).toEqual(new Set(['prov-a.example.net', 'prov-b.example.net']));

    // the owner of node-3 quarantined it; the other releases it through its own API, and the owner tries it again
    const owner = ha.get(NODE_3)?.instance === 'prov-a.example.net' ? a : b;
    const other = owner === a ? b : a;
    expect(other.release(NODE_3)).toBe(true);
    await until(
      "the release to reach the owner's history",
      () => byIdentity(owner).get(NODE_3)?.state !== 'quarantined',
      5_000,
    );
    await until('node-3 tried again by its owner', () => (byIdentity(other).get(NODE_3)?.attempts ?? 0) === 3, 15_000, {
      tick: both,
      stepMs: 100,
    });
    expect(byIdentity(other).get(NODE_3)).toMatchObject({ instance: owner.choria.identity, failures: 1 });
  }, 90_000);

  it('falls back to memory, saying why, when the broker has no JetStream', async () => {
    // a plain broker without JetStream in any account: neither connection can reach a bucket
    const s = await h.broker({ jetstream: false, choriaAccounts: false });
    const p = h.provisioner(s.url, 'workers: 1\n');
    await p.start();
    expect(p.status().history).toMatchObject({
      store: 'memory',
      reason: expect.stringMatching(
        /could not open the history bucket CHORIA_PROVISIONER_HISTORY: no JetStream answers under \$JS\.API/,
      ),
    });
  }, 30_000);
});

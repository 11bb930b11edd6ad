// The shared history against a real nats-server with JetStream: every write is conditional on the
// revision it was computed from, so a write held up (a paused instance, a broker outage) can never
// put an older record back over a newer one; its change is decided again on what is stored now.
import { connect, type NatsConnection } from 'nats';
import { afterEach, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { until } from '@choria-provisioner/test-support/wait';
import {
  HistoryBucket,
  NodeHistory,
  RevisionConflictError,
  type HistoryBacking,
  type NodeRecord,
} from '../../../src/provisioner/history/index.js';
import { provisionedReport } from '../support/shared-history.js';
import { basisOf, renewalFailed, renewalSent } from '../../../src/provisioner/renewal/record-changes.js';
import { RoundStore, roundChanges } from '../../../src/provisioner/renewal/round.js';

const HOUR = 3_600_000;

/** A backing whose writes can be held, as a paused process or a broker outage holds them. */
class HeldBacking implements HistoryBacking {
  readonly #bucket: HistoryBucket;
  held = false;
  readonly waiting: (() => void)[] = [];
  constructor(bucket: HistoryBucket) {
    this.#bucket = bucket;
  }
  async write(record: NodeRecord, revision: number): Promise<number> {
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    return this.#bucket.write(record, revision);
  }
  release(): void {
    this.held = false;
    for (const w of this.waiting.splice(0)) w();
  }
}

describe('the shared history: compare-and-set against nats-server', () => {
  const servers: RunningNatsServer[] = [];
  const conns: NatsConnection[] = [];
  const buckets: HistoryBucket[] = [];

  afterEach(async () => {
    for (const b of buckets.splice(0)) b.close();
    for (const c of conns.splice(0)) await c.close().catch(() => undefined);
    for (const s of servers.splice(0)) await s.stop();
  });

  async function bucket(s: RunningNatsServer): Promise<HistoryBucket> {
    const nc = await connect({ servers: s.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    conns.push(nc);
    const b = await HistoryBucket.open({ nc, bucket: 'HIST', ttlMs: 2 * HOUR, apiPrefix: '$JS.API', site: 'dc1' });
    buckets.push(b);
    return b;
  }

  /** An instance: its history, following the bucket and writing through `backing`. */
  async function instance(name: string, b: HistoryBucket, backing: HistoryBacking = b): Promise<NodeHistory> {
    const h = new NodeHistory({
      policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0 },
      instance: name,
      ttlMs: HOUR,
    });
    await b.watch({
      onRecord: (r, revision) => h.merge(r, revision),
      onInvalid: () => undefined,
      onRefusedIdentity: () => undefined,
    });
    h.attach(backing);
    return h;
  }

  const provisioned = (h: NodeHistory, at: number, expiresAt: number): NodeRecord =>
    h.attempted('n1.example.net', provisionedReport(at, expiresAt));

  it('a write with a revision that is not the stored one is refused, and says what is stored', async () => {
    const s = await startNatsServer({});
    servers.push(s);
    const b = await bucket(s);
    const h = await instance('prov1', b);
    provisioned(h, 1_000, 500_000);
    await until('the first record to be stored', async () => (await b.read('n1.example.net')).revision > 0);
    const first = await b.read('n1.example.net');
    await b.write({ ...(first.value as NodeRecord), attempts: 7 }, first.revision);
    // an older write, computed from the first revision, arrives late
    const late = b.write({ ...(first.value as NodeRecord), attempts: 3 }, first.revision);
    await expect(late).rejects.toBeInstanceOf(RevisionConflictError);
    const err = (await late.catch((e: unknown) => e)) as RevisionConflictError<NodeRecord>;
    expect(err.stored.value?.attempts).toBe(7);
    expect(err.stored.revision).toBeGreaterThan(first.revision);
    expect((await b.read('n1.example.net')).value?.attempts).toBe(7);
    // a create where a key exists is refused the same way
    await expect(b.write({ ...(first.value as NodeRecord), attempts: 1 }, 0)).rejects.toBeInstanceOf(
      RevisionConflictError,
    );
  });

  it('a delayed, older write cannot replace a newer record: its change is decided again on the newer one', async () => {
    const s = await startNatsServer({});
    servers.push(s);
    const shared = await bucket(s);
    const heldA = new HeldBacking(await bucket(s));
    const a = await instance('prov-a', await bucket(s), heldA);
    const bHistory = await instance('prov-b', await bucket(s));
    provisioned(a, 1_000, 500_000);
    await until('B to see the first provisioning', () => bHistory.get('n1.example.net')?.generation === 1);

    // A decides to renew n1 on what it sees, and its writes are held (it is paused, or cut off)
    heldA.held = true;
    const seen = basisOf(a.get('n1.example.net') as NodeRecord);
    const aSent = a.change('n1.example.net', renewalSent(seen, 2_000, 'prov-a'));
    expect(aSent.after?.renewalSentAt).toBe(2_000);
    // ... and a restart of it, an unconditional change that must keep what B writes meanwhile
    void a.sending('n1.example.net', 'restart', 2_100, 0);

    // meanwhile B renews n1 and provisions it again: generation 2, later credentials
    const bSent = bHistory.change('n1.example.net', renewalSent(seen, 2_500, 'prov-b'));
    expect(await bSent.ended).toBe('written');
    provisioned(bHistory, 3_000, 900_000);
    await until('the second provisioning to be stored', async () => {
      return (await shared.read('n1.example.net')).value?.generation === 2;
    });

    // A's held writes go out now, with the revision they were computed from
    heldA.release();
    expect(await aSent.ended).toBe('refused'); // the credentials it saw due are renewed already
    await until('A to have written what it still had', () => a.pendingWrites === 0, 10_000);
    const stored = (await shared.read('n1.example.net')).value as NodeRecord;
    expect(stored).toMatchObject({
      generation: 2,
      credentialsExpireAt: 900_000,
      provisionedAt: 3_000,
      renewalSentAt: undefined,
      restartSentAt: 2_100,
    });
    // and the view of both is the stored one: a completed renewal never reads as in flight again
    await until('both views to agree', () => a.get('n1.example.net')?.restartSentAt === 2_100);
    expect(a.get('n1.example.net')).toMatchObject({ generation: 2, renewalSentAt: undefined });
    expect(bHistory.get('n1.example.net')).toMatchObject({ generation: 2, renewalSentAt: undefined });
    // a time-out judged on A's old view is refused on the stored record
    const judged = a.change('n1.example.net', renewalFailed(2_000, 'not back in time', 95_000));
    expect(judged.after).toBeUndefined();
  }, 30_000);

  it('a write whose answer was lost is not applied twice', async () => {
    const s = await startNatsServer({});
    servers.push(s);
    const b = await bucket(s);
    let lost = true;
    const losing: HistoryBacking = {
      write: async (record, revision) => {
        const rev = await b.write(record, revision);
        if (lost) {
          lost = false;
          throw new Error('TIMEOUT'); // written, but the answer never came
        }
        return rev;
      },
    };
    const h = await instance('prov1', b, losing);
    provisioned(h, 1_000, 500_000);
    await until('the failed write to be noticed', () => !lost);
    h.flush();
    await until('everything written', () => h.pendingWrites === 0, 10_000);
    expect((await b.read('n1.example.net')).value).toMatchObject({ attempts: 1, generation: 1 });
  });

  it('two instances never both start a canary or take the last slot of the shared round', async () => {
    const s = await startNatsServer({});
    servers.push(s);
    const one = new RoundStore();
    const two = new RoundStore();
    one.attach((await bucket(s)).siteRecord('renewals'));
    two.attach((await bucket(s)).siteRecord('renewals'));
    const slot = (identity: string, by: string) => ({ identity, generation: 1, takenAt: 1, takenBy: by });
    // both decide on the empty round they see
    const a = one.change(roundChanges.take(slot('n1', 'one'), true, 2));
    const b = two.change(roundChanges.take(slot('n2', 'two'), true, 2));
    expect([a.applied, b.applied]).toEqual([true, true]);
    const ends = await Promise.all([a.ended, b.ended]);
    expect(ends.sort()).toEqual(['refused', 'written']);
    await one.refresh();
    await two.refresh();
    expect(one.round.slots).toHaveLength(1);
    expect(two.round).toEqual(one.round);
    const canary = one.round.canary?.identity as string;
    // the canary came back: both now try to fill the two slots with three nodes
    expect(await one.change(roundChanges.canaryBack(canary, 1)).ended).toBe('written');
    await two.refresh();
    const takes = [
      one.change(roundChanges.take(slot('n3', 'one'), false, 2)),
      two.change(roundChanges.take(slot('n4', 'two'), false, 2)),
      two.change(roundChanges.take(slot('n5', 'two'), false, 2)),
    ];
    const taken = await Promise.all(takes.map((t) => t.ended));
    expect(taken.filter((t) => t === 'written')).toHaveLength(1);
    await one.refresh();
    expect(one.round.slots).toHaveLength(2);
  });
});

// Per-node claims: two processes of one active/active site (one Choria identity, as replicas of a
// deployment have) never both hold a node; a claim lives a bounded time on each reader's own clock.
import { describe, expect, it, vi } from 'vitest';
import { NodeHistory, encodeRecord, type NodeRecord } from '../../src/provisioner/history/index.js';
import { SharedKv } from './support/shared-history.js';
import {
  CLAIM_LIFE_MS,
  CLAIM_MARGIN_MS,
  CLAIM_WAIT_MS,
  NodeClaims,
  claimedRunner,
} from '../../src/provisioner/node-claims.js';
import { isCancelled } from '../../src/util/cancelled.js';
import type { HostJob, HostResult } from '../../src/host/types.js';
import { silentLogger } from '../../src/util/logger.js';

function processOf(kv: SharedKv, token: string, clock: { now: number }): { history: NodeHistory; claims: NodeClaims } {
  const history = new NodeHistory({
    policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0 },
    instance: 'prov.example.net',
    process: token,
    ttlMs: 86_400_000,
  });
  kv.follow(history);
  return { history, claims: new NodeClaims({ history, now: () => clock.now, wallClock: () => 1_000 + clock.now }) };
}

const ended = (h: NodeHistory, identity: string): NodeRecord =>
  h.attempted(identity, {
    outcome: 'provisioned',
    message: undefined,
    at: 5_000,
    durationMs: 1,
    configured: true,
    discoveredAt: 1,
  });

describe('NodeClaims', () => {
  it('one identity, two processes: the second is refused while the first holds the node, and takes it after', async () => {
    const kv = new SharedKv();
    const clock = { now: 0 };
    const a = processOf(kv, 'prov.example.net#aaaa', clock);
    const b = processOf(kv, 'prov.example.net#bbbb', clock);
    expect(await a.claims.take('n1')).toBeUndefined();
    expect(kv.get('n1')?.claimedBy).toBe('prov.example.net#aaaa');
    expect(a.claims.refusal('n1')).toBeUndefined();
    expect(await b.claims.take('n1')).toMatch(/another provisioner process \(prov\.example\.net#aaaa\) holds/);
    expect(b.claims.refusal('n1')).toMatch(/holds no claim/);
    // the attempt ends: the claim goes back with its record
    ended(a.history, 'n1');
    a.claims.ended('n1');
    await Promise.resolve();
    expect(kv.get('n1')?.claimedBy).toBeUndefined();
    expect(await b.claims.take('n1')).toBeUndefined();
    expect(a.claims.refusal('n1')).toMatch(/holds no claim/);
  });

  it('both decide on a node nobody holds: compare-and-set gives it to one of them', async () => {
    const kv = new SharedKv();
    const clock = { now: 0 };
    const a = processOf(kv, 'p#a', clock);
    const b = processOf(kv, 'p#b', clock);
    const taken = await Promise.all([a.claims.take('n1'), b.claims.take('n1')]);
    expect(taken.filter((t) => t === undefined)).toHaveLength(1);
    expect([a.claims.refusal('n1'), b.claims.refusal('n1')].filter((r) => r === undefined)).toHaveLength(1);
  });

  it("a dead holder's claim is taken over once the reader has seen it unchanged for its life; the holder stops acting before", async () => {
    const kv = new SharedKv();
    const clock = { now: 0 };
    const a = processOf(kv, 'p#a', clock);
    const b = processOf(kv, 'p#b', clock);
    expect(await a.claims.take('n1')).toBeUndefined();
    clock.now = 10_000;
    expect(await b.claims.take('n1')).toMatch(/holds the claim/); // first seen now
    clock.now = CLAIM_LIFE_MS - CLAIM_MARGIN_MS;
    expect(a.claims.refusal('n1')).toMatch(/claim on the node ran out/);
    clock.now = 10_000 + CLAIM_LIFE_MS - 1;
    expect(await b.claims.take('n1')).toMatch(/holds the claim/);
    clock.now = 10_000 + CLAIM_LIFE_MS;
    expect(await b.claims.take('n1')).toBeUndefined();
    expect(a.claims.refusal('n1')).toMatch(/ran out/);
    expect(kv.get('n1')?.claimedBy).toBe('p#b');
  });

  it('claimedRunner: a node held by another process ends skipped_locked and is never run', async () => {
    const kv = new SharedKv();
    const clock = { now: 0 };
    const a = processOf(kv, 'p#a', clock);
    const b = processOf(kv, 'p#b', clock);
    const ran: string[] = [];
    const lease = { refusal: () => undefined, recordIntent: () => Promise.resolve() };
    const runner = (job: HostJob): Promise<HostResult> => {
      ran.push(job.identity);
      expect(job.claim?.refusal()).toBeUndefined();
      return Promise.resolve({ outcome: 'provisioned' });
    };
    expect(await a.claims.take('n1')).toBeUndefined();
    const job = {
      identity: 'n1',
      discoveredAt: 0,
      signal: new AbortController().signal,
      logger: silentLogger(),
      onStep: () => undefined,
    } as HostJob;
    const result = await claimedRunner(runner, b.claims, lease)(job);
    expect(result.outcome).toBe('skipped_locked');
    expect(ran).toEqual([]);
    expect(await claimedRunner(runner, a.claims, lease)(job)).toMatchObject({ outcome: 'provisioned' });
    expect(ran).toEqual(['n1']);
  });

  it('under a claim a configure waits for its record to be shared, even while the copy is slow, and is not sent without', async () => {
    vi.useFakeTimers();
    try {
      const history = new NodeHistory({
        policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0 },
        instance: 'p',
        process: 'p#a',
        ttlMs: 86_400_000,
      });
      history.attach({ write: () => new Promise<number>(() => undefined) }); // JetStream that never answers
      const claims = new NodeClaims({ history });
      let outcome: unknown;
      const sent = claims.recordIntent('n1', 'configure').then(
        () => (outcome = 'sent'),
        (err: unknown) => (outcome = err),
      );
      await vi.advanceTimersByTimeAsync(CLAIM_WAIT_MS - 1);
      expect(outcome).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      await sent;
      expect(isCancelled(outcome, 'lease')).toBe(true);
      expect(String(outcome)).toMatch(/configure was not sent: its record was not shared within 10 s \(late\)/);
      // the record stays queued: once written, whoever takes the node next restarts it first
      expect(history.get('n1')?.configuredAt).toBeDefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it('claims survive the stored form', () => {
    const kv = new SharedKv();
    const a = processOf(kv, 'p#a', { now: 0 });
    const r = { ...ended(a.history, 'n1'), claimedBy: 'p#a', claimedAt: 1_000 };
    expect(JSON.parse(new TextDecoder().decode(encodeRecord(r)))).toMatchObject({ claimedBy: 'p#a' });
  });
});

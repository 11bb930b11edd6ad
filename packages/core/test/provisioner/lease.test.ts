import { describe, expect, it, vi } from 'vitest';
import {
  SENDING_RECORD_WAIT_MS,
  SHARED_INTENT_WAIT_MS,
  SiteLease,
  type LeaseSource,
} from '../../src/provisioner/lease.js';
import { CancelledError } from '../../src/util/cancelled.js';
import { NodeHistory } from '../../src/provisioner/history/index.js';
import { silentLogger } from '../../src/util/logger.js';

const history = (): NodeHistory =>
  new NodeHistory({
    policy: { backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 0 },
    instance: 'p',
    ttlMs: 86_400_000,
  });
const source = (end: number): LeaseSource => ({ leaseEndsAt: () => end });

describe('SiteLease: whether this instance may still work on nodes', () => {
  it('alone: always', () => {
    const lease = new SiteLease({ history: history(), logger: silentLogger(), now: () => 1e12 });
    expect(lease.refusal()).toBeUndefined();
  });

  it('leader: until its lease ends by the monotonic clock, not after; never without leadership', () => {
    let now = 1000;
    let end = 5000;
    const lease = new SiteLease({
      history: history(),
      logger: silentLogger(),
      now: () => now,
      election: () => source(end),
    });
    expect(lease.refusal()).toBeUndefined();
    now = 4999;
    expect(lease.refusal()).toBeUndefined();
    now = 5000;
    expect(lease.refusal()).toMatch(/leadership lease ran out 0 ?ms ago/);
    now = 21_000; // a 16 s pause
    expect(lease.refusal()).toMatch(/ran out 16(\.0)? ?s ago/);
    end = 0;
    expect(lease.refusal()).toMatch(/not the leader/);
    const noElection = new SiteLease({
      history: history(),
      logger: silentLogger(),
      now: () => 1,
      election: () => undefined,
    });
    expect(noElection.refusal()).toMatch(/not the leader/);
  });

  it('active/active member: until its own heartbeat lease ends', () => {
    let now = 100;
    const lease = new SiteLease({
      history: history(),
      logger: silentLogger(),
      now: () => now,
      membership: () => source(6000),
    });
    expect(lease.refusal()).toBeUndefined();
    now = 6000;
    expect(lease.refusal()).toMatch(/active\/active member's lease ran out/);
    const unheard = new SiteLease({
      history: history(),
      logger: silentLogger(),
      now: () => 1,
      membership: () => source(0),
    });
    expect(unheard.refusal()).toMatch(/has not heard its own heartbeat/);
  });

  it('sending() records the configure in the node history before it resolves', async () => {
    const h = history();
    const lease = new SiteLease({ history: h, logger: silentLogger(), wallClock: () => 1234 });
    await lease.recordIntent('n1', 'configure');
    expect(h.get('n1')?.configuredAt).toBe(1234);
    await lease.recordIntent('n1', 'restart');
    expect(h.get('n1')?.restartSentAt).toBe(1234);
  });

  it('sending() waits at most SENDING_RECORD_WAIT_MS for an unanswered shared copy, then not at all while it stays unsteady', async () => {
    vi.useFakeTimers();
    try {
      let mono = 0;
      const h = new NodeHistory({
        policy: { backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 0 },
        instance: 'p',
        ttlMs: 86_400_000,
        monotonic: () => mono,
      });
      h.attach({ write: () => new Promise<number>(() => undefined) }); // JetStream that never answers
      const warnings: string[] = [];
      const logger = silentLogger();
      logger.warn = ((m: string) => (warnings.push(m), logger)) as typeof logger.warn;
      const lease = new SiteLease({ history: h, logger, wallClock: () => 1 });
      let done = false;
      const first = lease.recordIntent('n1', 'configure').then(() => (done = true));
      await vi.advanceTimersByTimeAsync(SENDING_RECORD_WAIT_MS - 1);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await first;
      expect(warnings.join('\n')).toMatch(/did not take the configure record of n1 within 2(\.0)? ?s/);
      // the next send goes at once, its record kept for writing
      mono = 100;
      let second = false;
      void lease.recordIntent('n2', 'restart').then(() => (second = true));
      await vi.advanceTimersByTimeAsync(0);
      expect(second).toBe(true);
      expect(h.get('n2')?.restartSentAt).toBe(1);
      expect(warnings).toHaveLength(1);
    } finally {
      vi.useRealTimers();
    }
  });
  it('under leader election with a shared history, sends nothing until the record is shared: a next leader must know', async () => {
    vi.useFakeTimers();
    try {
      const h = history();
      let answer: ((revision: number) => void) | undefined;
      h.attach({ write: () => new Promise<number>((resolve) => (answer = resolve)) }); // a slow JetStream
      const lease = new SiteLease({
        history: h,
        logger: silentLogger(),
        wallClock: () => 1,
        election: () => source(1e15),
      });
      // shared late but within the wait: the configure goes
      let done = false;
      const first = lease.recordIntent('n1', 'configure').then(() => (done = true));
      await vi.advanceTimersByTimeAsync(SENDING_RECORD_WAIT_MS + 1);
      expect(done).toBe(false);
      answer?.(1);
      await first;
      // never shared: cancelled (not a failure), nothing is sent
      const second = lease.recordIntent('n2', 'restart').catch((err: unknown) => err);
      await vi.advanceTimersByTimeAsync(SHARED_INTENT_WAIT_MS + 1);
      const err = await second;
      expect(err).toBeInstanceOf(CancelledError);
      expect(String(err)).toMatch(/restart.*its record was not shared within 10(\.0)? ?s/);
    } finally {
      vi.useRealTimers();
    }
  });
});

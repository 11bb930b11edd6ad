import { describe, expect, it } from 'vitest';
import {
  backoffDelay,
  DEFAULT_BACKOFF,
  FIVE_SEC,
  FIVE_SEC_START_GRACE,
  sleep,
  TWENTY_SEC,
  type BackoffPolicy,
} from '../../src/util/backoff.js';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface PolicyVector {
  millis: number[];
  duration_ms_range_by_n: [number, number][];
}
interface BackoffVectors {
  policies: Record<string, PolicyVector>;
  rpc_retry_schedule_example: { tries_3_sleep_ranges_ms: [number, number][] };
  election_campaign_example: {
    leader_interval_ms: [number, number];
    candidate_after_1_failure_ms: [number, number];
    candidate_max_ms: [number, number];
  };
}

const vectors = readVectorJson<BackoffVectors>('crypto', 'backoff.json');
const policies: [string, BackoffPolicy][] = [
  ['FiveSec (= Default)', FIVE_SEC],
  ['TwentySec', TWENTY_SEC],
  ['FiveSecStartGrace', FIVE_SEC_START_GRACE],
];
const LOWEST = (): number => 0;
const HIGHEST = (): number => 0.999999;

describe('backoff policies', () => {
  it('Default is FiveSec', () => {
    expect(DEFAULT_BACKOFF).toBe(FIVE_SEC);
  });

  it.each(policies)('%s has the vector steps and every inclusive range', (name, policy) => {
    const vector = vectors.policies[name];
    expect(vector).toBeDefined();
    if (vector === undefined) return;
    expect([...policy.millis]).toEqual(vector.millis);
    vector.duration_ms_range_by_n.forEach(([min, max], n) => {
      expect(backoffDelay(policy, n, LOWEST), `${name} n=${n} min`).toBe(min);
      expect(backoffDelay(policy, n, HIGHEST), `${name} n=${n} max`).toBe(max);
      for (let i = 0; i < 20; i++) {
        const d = backoffDelay(policy, n);
        expect(Number.isInteger(d)).toBe(true);
        expect(d).toBeGreaterThanOrEqual(min);
        expect(d).toBeLessThanOrEqual(max);
      }
    });
  });

  it('repeats the last step beyond the end', () => {
    const last = vectors.policies['TwentySec']?.duration_ms_range_by_n.at(-1);
    expect(last).toEqual(vectors.election_campaign_example.candidate_max_ms);
    expect(backoffDelay(TWENTY_SEC, 500, LOWEST)).toBe(last?.[0]);
    expect(backoffDelay(TWENTY_SEC, 500, HIGHEST)).toBe(last?.[1]);
  });

  it('matches the RPC retry and election examples', () => {
    vectors.rpc_retry_schedule_example.tries_3_sleep_ranges_ms.forEach(([min, max], i) => {
      expect(backoffDelay(DEFAULT_BACKOFF, i + 1, LOWEST)).toBe(min);
      expect(backoffDelay(DEFAULT_BACKOFF, i + 1, HIGHEST)).toBe(max);
    });
    const { leader_interval_ms: leader, candidate_after_1_failure_ms: candidate } = vectors.election_campaign_example;
    expect([backoffDelay(TWENTY_SEC, 0, LOWEST), backoffDelay(TWENTY_SEC, 0, HIGHEST)]).toEqual(leader);
    expect([backoffDelay(TWENTY_SEC, 1, LOWEST), backoffDelay(TWENTY_SEC, 1, HIGHEST)]).toEqual(candidate);
  });
});

describe('sleep', () => {
  it('resolves after the delay', async () => {
    const started = Date.now();
    await sleep(30);
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });

  it('rejects with the signal reason when aborted while sleeping', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    const started = Date.now();
    const pending = sleep(10_000, controller.signal);
    setTimeout(() => controller.abort(reason), 10);
    await expect(pending).rejects.toBe(reason);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort('stop');
    await expect(sleep(10_000, controller.signal)).rejects.toBe('stop');
  });

  it('stays resolved when the signal aborts afterwards', async () => {
    const controller = new AbortController();
    const pending = sleep(1, controller.signal);
    await pending;
    controller.abort(new Error('late'));
    await expect(pending).resolves.toBeUndefined();
  });
});

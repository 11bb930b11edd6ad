import { describe, expect, it } from 'vitest';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';
import { DEFAULT_BACKOFF, TWENTY_SEC, backoffDelay, type BackoffPolicy } from '../../../src/util/backoff.js';
import { kvKeySubject, streamInfoSubject } from '../../../src/provisioner/election/kv-campaign.js';
import { ELECTION_TTL_MAX_MS, ELECTION_TTL_MIN_MS, electionTtlProblem } from '../../../src/provisioner/election/ttl.js';

interface PolicyVector {
  millis: number[];
  duration_ms_range_by_n: [number, number][];
}
interface BackoffVectors {
  policies: Record<string, PolicyVector>;
  election_campaign_example: {
    leader_interval_ms: [number, number];
    candidate_after_1_failure_ms: [number, number];
    candidate_max_ms: [number, number];
  };
}

const vectors = readVectorJson<BackoffVectors>('crypto', 'backoff.json');

function policy(name: string): PolicyVector {
  const p = vectors.policies[name];
  if (p === undefined) throw new Error(`backoff.json has no policy ${name}`);
  return p;
}

const justBelowOne = (): number => 0.999_999_999;

describe.each<[string, BackoffPolicy]>([
  ['TwentySec', TWENTY_SEC],
  ['FiveSec (= Default)', DEFAULT_BACKOFF],
])('election back-off policy %s', (name, steps) => {
  const v = policy(name);

  it('has the steps of backoff.json', () => {
    expect([...steps.millis]).toEqual(v.millis);
  });

  it('draws every step inside the inclusive range of backoff.json, reaching both ends', () => {
    v.duration_ms_range_by_n.forEach(([lo, hi], n) => {
      expect(backoffDelay(steps, n, () => 0)).toBe(lo);
      expect(backoffDelay(steps, n, justBelowOne)).toBe(hi);
      const d = backoffDelay(steps, n);
      expect(Number.isInteger(d)).toBe(true);
      expect(d).toBeGreaterThanOrEqual(lo);
      expect(d).toBeLessThanOrEqual(hi);
    });
  });

  it('uses the last step beyond the end and stays in range for a random source returning 1', () => {
    const last = v.duration_ms_range_by_n[v.duration_ms_range_by_n.length - 1] ?? [0, 0];
    expect(backoffDelay(steps, 1_000, () => 0)).toBe(last[0]);
    expect(backoffDelay(steps, 1_000, () => 1)).toBe(last[1]);
  });
});

describe('election campaign intervals (backoff.json election_campaign_example)', () => {
  const ex = vectors.election_campaign_example;
  it('leader, first failure and maximum candidate intervals', () => {
    expect([backoffDelay(TWENTY_SEC, 0, () => 0), backoffDelay(TWENTY_SEC, 0, justBelowOne)]).toEqual(
      ex.leader_interval_ms,
    );
    expect([backoffDelay(TWENTY_SEC, 1, () => 0), backoffDelay(TWENTY_SEC, 1, justBelowOne)]).toEqual(
      ex.candidate_after_1_failure_ms,
    );
    expect([backoffDelay(TWENTY_SEC, 43, () => 0), backoffDelay(TWENTY_SEC, 43, justBelowOne)]).toEqual(
      ex.candidate_max_ms,
    );
  });
});

describe('electionTtlProblem', () => {
  it('accepts 4 s <= TTL <= 1 h', () => {
    expect(ELECTION_TTL_MIN_MS).toBe(4_000);
    expect(ELECTION_TTL_MAX_MS).toBe(3_600_000);
    for (const ok of [4_000, 5_000, 60_000, 3_600_000]) expect(electionTtlProblem(ok)).toBeUndefined();
  });

  it('rejects TTLs outside the bounds, naming the check that failed', () => {
    expect(electionTtlProblem(3_999)).toMatch(/less than 1 s shorter than the bucket TTL 4 s/);
    expect(electionTtlProblem(1_200)).toMatch(/campaign interval 900 ms \(0\.75 x TTL 1\.2 s\) is below 1 s/);
    expect(electionTtlProblem(999)).toMatch(/bucket TTL 999 ms is below 1 s/);
    expect(electionTtlProblem(3_600_001)).toMatch(/is above 1 h/);
    expect(electionTtlProblem(0)).toMatch(/not set/);
    expect(electionTtlProblem(Number.NaN)).toMatch(/not set/);
    for (const bad of [3_999, 999, 3_600_001, 0]) expect(electionTtlProblem(bad)).toContain('4 s <= TTL <= 1 h');
  });
});

interface ProtocolVector {
  api_prefix: string;
  steps: { op: string; request_subject: string; headers?: Record<string, string> }[];
}

describe('election subjects', () => {
  const protocol = readVectorJson<ProtocolVector>('crypto', 'election-protocol.json');

  it('match the recorded imported-mode subjects of election-protocol.json', () => {
    const status = protocol.steps.find((s) => s.op === 'bucket status');
    const campaign = protocol.steps.find((s) => s.op.startsWith('p1 campaign'));
    expect(streamInfoSubject({ apiPrefix: protocol.api_prefix })).toBe(status?.request_subject);
    expect(kvKeySubject({ apiPrefix: protocol.api_prefix })).toBe(campaign?.request_subject);
    expect(kvKeySubject({ apiPrefix: protocol.api_prefix, key: 'other' })).toBe(
      protocol.steps.find((s) => s.op.startsWith('any other key'))?.request_subject,
    );
  });

  it('use unprefixed $KV subjects with the plain JetStream API prefix', () => {
    expect(streamInfoSubject({ apiPrefix: '$JS.API' })).toBe('$JS.API.STREAM.INFO.KV_CHORIA_LEADER_ELECTION');
    expect(kvKeySubject({ apiPrefix: '$JS.API' })).toBe('$KV.CHORIA_LEADER_ELECTION.provisioner');
    expect(kvKeySubject({ apiPrefix: 'choria.streams.', bucket: 'B', key: 'k' })).toBe('choria.streams.$KV.B.k');
    expect(kvKeySubject()).toBe('choria.streams.$KV.CHORIA_LEADER_ELECTION.provisioner');
  });

  it('refuse invalid prefixes, bucket and key names', () => {
    expect(() => kvKeySubject({ apiPrefix: 'choria.*' })).toThrow(/invalid JetStream API prefix/);
    expect(() => kvKeySubject({ bucket: 'A.B' })).toThrow(/invalid KV bucket name "A.B"/);
    expect(() => kvKeySubject({ key: 'x y' })).toThrow(/invalid KV key "x y"/);
    expect(() => kvKeySubject({ key: '.x' })).toThrow(/invalid KV key/);
  });
});

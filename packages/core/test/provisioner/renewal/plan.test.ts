import { describe, expect, it } from 'vitest';
import type { NodeRecord } from '../../../src/provisioner/history/index.js';
import { isRenewing, renewalDueAt, renewalState, spread } from '../../../src/provisioner/renewal/plan.js';

const MIN = 60_000;
const settings = { windowPercent: 20, marginMs: MIN };

function record(over: Partial<NodeRecord> = {}): NodeRecord {
  return {
    identity: 'n1.example.net',
    firstSeen: 0,
    attempts: 1,
    failures: 0,
    outcome: 'provisioned',
    error: undefined,
    instance: 'prov1',
    attemptAt: 0,
    durationMs: 1,
    provisionedAt: 0,
    notBefore: undefined,
    quarantinedAt: undefined,
    configuredAt: undefined,
    restartSentAt: undefined,
    updatedAt: 0,
    credentialsExpireAt: 100 * MIN,
    ...over,
  };
}

describe('renewalDueAt', () => {
  it('falls in the last fifth of the validity, no later than the margin before the expiry', () => {
    for (let i = 0; i < 500; i++) {
      const at = renewalDueAt(record({ identity: `node-${i}.example.net` }), settings) ?? NaN;
      expect(at).toBeGreaterThanOrEqual(80 * MIN);
      expect(at).toBeLessThanOrEqual(99 * MIN);
    }
  });

  it('spreads a fleet provisioned together over the window', () => {
    const times = Array.from({ length: 1000 }, (_, i) => renewalDueAt(record({ identity: `n${i}` }), settings) ?? 0);
    const buckets = [0, 0, 0, 0];
    for (const t of times) {
      const b = Math.min(3, Math.floor((t - 80 * MIN) / ((19 * MIN) / 4)));
      buckets[b] = (buckets[b] ?? 0) + 1;
    }
    for (const b of buckets) expect(b).toBeGreaterThan(180);
  });

  it('is the same for every instance, and new for new credentials', () => {
    const r = record();
    expect(renewalDueAt(r, settings)).toBe(renewalDueAt({ ...r, instance: 'prov2', updatedAt: 5 }, settings));
    expect(renewalDueAt(r, settings)).not.toBe(renewalDueAt({ ...r, credentialsExpireAt: 100 * MIN + 1 }, settings));
  });

  it('closes a return timeout before the margin where the window leaves room, so a renewal has time to come back', () => {
    const withReturn = { ...settings, returnTimeoutMs: 9 * MIN };
    for (let i = 0; i < 500; i++) {
      const at = renewalDueAt(record({ identity: `node-${i}.example.net` }), withReturn) ?? NaN;
      expect(at).toBeGreaterThanOrEqual(80 * MIN);
      expect(at).toBeLessThanOrEqual(90 * MIN);
    }
    // a window too small for both: it closes where it opens
    expect(renewalDueAt(record(), { ...settings, returnTimeoutMs: 30 * MIN })).toBe(80 * MIN);
  });

  it('opens the window at once when the margin leaves no room', () => {
    expect(renewalDueAt(record(), { windowPercent: 20, marginMs: 50 * MIN })).toBe(80 * MIN);
  });

  it('has no time without credentials that expire', () => {
    expect(renewalDueAt(record({ credentialsExpireAt: undefined }), settings)).toBeUndefined();
  });

  it('spread() stays in [0, 1)', () => {
    for (const t of ['', 'a', 'n1@0', 'x'.repeat(300)]) {
      expect(spread(t)).toBeGreaterThanOrEqual(0);
      expect(spread(t)).toBeLessThan(1);
    }
  });
});

describe('renewalState', () => {
  const due = renewalDueAt(record(), settings) ?? 0;
  it('follows the record', () => {
    expect(renewalState(record({ credentialsExpireAt: undefined }), 0, settings)).toBe('none');
    expect(renewalState(record(), due - 1, settings)).toBe('scheduled');
    expect(renewalState(record(), due, settings)).toBe('due');
    expect(renewalState(record({ notRenewable: 'no --default' }), due, settings)).toBe('not-renewable');
    expect(renewalState(record({ renewalSentAt: due }), due, settings)).toBe('in-flight');
    expect(renewalState(record({ renewalSentAt: due, renewalError: 'refused' }), due, settings)).toBe('failed');
  });

  it('isRenewing: sent and neither provisioned again nor failed', () => {
    expect(isRenewing(record({ renewalSentAt: 5 }))).toBe(true);
    expect(isRenewing(record({ renewalSentAt: 5, renewalError: 'x' }))).toBe(false);
    expect(isRenewing(record())).toBe(false);
    expect(isRenewing(undefined)).toBe(false);
  });
});

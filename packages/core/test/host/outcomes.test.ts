import { describe, expect, it } from 'vitest';
import { OUTCOMES, OUTCOME_RULES, outcomeMeaning } from '../../src/host/types.js';
import { ProvisionerMetrics } from '../../src/metrics/metrics.js';
import { RecentThroughput } from '../../src/provisioner/throughput.js';
import { NodeHistory } from '../../src/provisioner/history/node-history.js';
import { Registry } from 'prom-client';

const policy = { backoffMs: 60_000, backoffMaxMs: 600_000, quarantineAfter: 1, random: () => 0.5 };

describe('the outcome table', () => {
  it('gives every outcome one meaning', () => {
    expect(OUTCOMES).toEqual(Object.keys(OUTCOME_RULES));
    expect(OUTCOMES.filter((o) => outcomeMeaning(o) === 'success').sort()).toEqual([
      'provisioned',
      'shutdown',
      'upgraded',
    ]);
    expect(OUTCOMES.filter((o) => outcomeMeaning(o) === 'failure')).toEqual(['failed']);
    expect(outcomeMeaning('cancelled')).toBe('neutral');
  });

  it('a cancelled attempt counts in no error metric, only in its outcome', async () => {
    const registry = new Registry();
    const m = new ProvisionerMetrics(registry, 's');
    m.attemptEnded('cancelled');
    m.attemptEnded('failed');
    m.attemptEnded('deferred');
    m.attemptEnded('provisioned');
    const text = await registry.metrics();
    // the Go provisioner's error counter counts failures, defers and stale skips, never a cancel
    expect(text).toMatch(/choria_provisioner_provision_errors\{site="s"\} 2\b/);
    expect(text).toMatch(/choria_provisioner_provisioned\{site="s"\} 1\b/);
    expect(text).toMatch(/choria_provisioner_outcomes\{site="s",outcome="cancelled"\} 1\b/);
  });

  it('a cancelled attempt neither backs a node off nor quarantines it, and keeps what a failure started', () => {
    const h = new NodeHistory({ policy, instance: 'p', ttlMs: 3_600_000 });
    const report = {
      message: 'choria_provision#configure was cancelled: the provisioner is stopping',
      at: 1_000,
      durationMs: 5,
      configured: false,
      discoveredAt: 900,
    };
    const r = h.attempted('n1', { ...report, outcome: 'cancelled' });
    expect(r.failures).toBe(0);
    expect(r.quarantinedAt).toBeUndefined();
    expect(r.notBefore).toBeUndefined();
    expect(h.deferral('n1', 1_001)).toBeUndefined();
    // a cancelled attempt that had configured the node keeps that memory for the next one
    expect(h.attempted('n2', { ...report, outcome: 'cancelled', configured: true }).configuredAt).toBe(1_000);
    expect(
      h.attempted('n2', { ...report, at: 2_000, outcome: 'provisioned', configured: true }).configuredAt,
    ).toBeUndefined();
  });

  it('throughput counts successes and failures, not neutral outcomes', () => {
    const t = new RecentThroughput(10_000, 6, 0);
    for (const o of OUTCOMES) t.note(outcomeMeaning(o), 1_000);
    const s = t.series(1_000);
    expect(s.provisioned.reduce((a, b) => a + b, 0)).toBe(3);
    expect(s.failed.reduce((a, b) => a + b, 0)).toBe(1);
  });
});

import { describe, expect, it } from 'vitest';
import { RecentThroughput } from '../../src/provisioner/throughput.js';

describe('RecentThroughput', () => {
  it('counts per slot, oldest first, the current slot last', () => {
    const t = new RecentThroughput(1000, 4, 10_000);
    t.note('success', 10_100);
    t.note('success', 10_900);
    t.note('failure', 11_000);
    t.note('success', 12_500);
    expect(t.series(12_600)).toEqual({ slotMs: 1000, provisioned: [0, 2, 0, 1], failed: [0, 0, 1, 0] });
  });

  it('forgets slots older than the window, also after a long quiet time', () => {
    const t = new RecentThroughput(1000, 3, 0);
    t.note('success', 0);
    t.note('success', 1000);
    expect(t.series(2000).provisioned).toEqual([1, 1, 0]);
    expect(t.series(3000).provisioned).toEqual([1, 0, 0]);
    expect(t.series(1_000_000).provisioned).toEqual([0, 0, 0]);
    t.note('failure', 1_000_500);
    expect(t.series(1_000_600)).toEqual({ slotMs: 1000, provisioned: [0, 0, 0], failed: [0, 0, 1] });
  });
});

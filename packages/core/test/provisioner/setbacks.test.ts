import { describe, expect, it } from 'vitest';
import { Setbacks, backoffAfter } from '../../src/provisioner/setbacks.js';

describe('per-node back-off and quarantine', () => {
  it('doubles the back-off from the base to the cap, jittered to 50-100 %', () => {
    const low = { backoffMs: 60_000, backoffMaxMs: 1_800_000, quarantineAfter: 0, random: () => 0 };
    const high = { ...low, random: () => 1 - 1e-12 };
    expect([1, 2, 3, 4, 5, 6, 7].map((n) => backoffAfter(n, high))).toEqual([60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000]);
    expect(backoffAfter(1, low)).toBe(30_000);
    expect(backoffAfter(40, high)).toBe(1_800_000); // no overflow
    expect(backoffAfter(3, { ...high, backoffMs: 0 })).toBe(0); // off, as upstream
  });

  it('holds a failing node back until its back-off ends, and a quarantined one until it is cleared', () => {
    const s = new Setbacks({ backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 3, random: () => 1 - 1e-12 });
    s.failed('n1', 'boom', 0);
    expect(s.holdsBack('n1', 999)).toBe('backoff');
    expect(s.holdsBack('n1', 1000)).toBeUndefined();
    s.failed('n1', 'boom', 1000);
    expect(s.holdsBack('n1', 2999)).toBe('backoff');
    const q = s.failed('n1', 'CSR refused', 3000);
    expect(q).toMatchObject({ failures: 3, quarantined: { reason: 'CSR refused', at: 3000 } });
    expect(s.holdsBack('n1', 10_000_000)).toBe('quarantined');
    expect(s.quarantinedCount()).toBe(1);
    s.clearBackoff('n1'); // a reboot without release-on-startup keeps the quarantine
    expect(s.holdsBack('n1', 10_000_000)).toBe('quarantined');
    expect(s.clear('n1')).toBe(true);
    expect(s.holdsBack('n1', 0)).toBeUndefined();
    expect(s.quarantinedCount()).toBe(0);
  });

  it('never quarantines with quarantine_after 0 and forgets the oldest beyond its capacity', () => {
    const s = new Setbacks({ backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0 }, 2);
    for (let i = 0; i < 50; i++) s.failed('n1', 'x', i);
    expect(s.holdsBack('n1', 50)).toBeUndefined();
    expect(s.get('n1')?.failures).toBe(50);
    s.failed('n2', 'x', 0);
    s.failed('n3', 'x', 0);
    expect(s.get('n1')).toBeUndefined();
    expect(s.get('n3')?.failures).toBe(1);
  });
});

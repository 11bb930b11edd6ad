import { describe, expect, it } from 'vitest';
import { HostList } from '../../src/provisioner/host-list.js';

describe('HostList', () => {
  it('does not add a known identity twice, whatever its state', () => {
    const l = new HostList();
    const a = l.offer('n1', 'discovery', 1000, 60_000);
    expect(a.result).toBe('added');
    expect(l.offer('n1', 'event', 2000, 60_000).result).toBe('known');
    a.entry.state = 'provisioning';
    expect(l.offer('n1', 'discovery', 200_000, 60_000).result).toBe('known');
    a.entry.state = 'held';
    expect(l.offer('n1', 'discovery', 200_000, 60_000).result).toBe('known');
    expect(l.size).toBe(1);
  });

  it('refreshes a still-queued entry older than one interval instead of re-queueing it (upstream intent)', () => {
    const l = new HostList();
    const a = l.offer('n1', 'discovery', 1000, 60_000);
    expect(l.offer('n1', 'discovery', 1000 + 60_000, 60_000).result).toBe('known');
    const r = l.offer('n1', 'discovery', 1000 + 60_001, 60_000);
    expect(r.result).toBe('refreshed');
    expect(r.entry).toBe(a.entry);
    expect(a.entry.discoveredAt).toBe(1000 + 60_001);
  });

  it('tells stale queue items from the live entry after a remove and re-add', () => {
    const l = new HostList();
    const first = l.offer('n1', 'discovery', 1, 60_000).entry;
    l.remove(first);
    const second = l.offer('n1', 'discovery', 2, 60_000).entry;
    expect(l.isCurrent(first)).toBe(false);
    expect(l.isCurrent(second)).toBe(true);
    expect(second.generation).toBeGreaterThan(first.generation);
  });

  it("counts a new entry's attempts on from the node's past ones", () => {
    const l = new HostList();
    expect(l.offer('c', 'discovery', 9, 60_000, 3).entry.attempts).toBe(3);
    expect(l.offer('d', 'discovery', 9, 60_000).entry.attempts).toBe(0);
  });

  it('clear() returns every active entry so in-flight work can be aborted', () => {
    const l = new HostList();
    l.offer('a', 'discovery', 1, 60_000);
    l.offer('b', 'event', 1, 60_000);
    expect(l.clear().map((e) => e.identity).sort()).toEqual(['a', 'b']);
    expect(l.size).toBe(0);
  });
});

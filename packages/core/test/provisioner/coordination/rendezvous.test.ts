import { describe, expect, it } from 'vitest';
import { rendezvousOwner } from '../../../src/provisioner/coordination/rendezvous.js';

const nodes = Array.from({ length: 6000 }, (_, i) => `node-${i + 1}.example.net`);
const members = ['prov-a.example.net', 'prov-b.example.net', 'prov-c.example.net'];

function shares(list: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const n of nodes) {
    const owner = rendezvousOwner(n, list);
    counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

describe('rendezvous hashing', () => {
  it('gives every member a fair share of similar names', () => {
    const counts = shares(members);
    expect([...counts.keys()].sort()).toEqual(members);
    for (const c of counts.values()) expect(Math.abs(c - 2000)).toBeLessThan(200);
  });

  it('does not depend on the order of the member list', () => {
    const reversed = [...members].reverse();
    for (const n of nodes.slice(0, 500)) expect(rendezvousOwner(n, reversed)).toBe(rendezvousOwner(n, members));
  });

  it("moves only the leaving member's nodes when one leaves", () => {
    const survivors = members.filter((m) => m !== 'prov-b.example.net');
    let moved = 0;
    for (const n of nodes) {
      const before = rendezvousOwner(n, members);
      const after = rendezvousOwner(n, survivors);
      if (before !== 'prov-b.example.net') expect(after).toBe(before);
      else moved++;
    }
    // and the survivors split the leaver's share between them
    const split = shares(survivors);
    expect(moved).toBeGreaterThan(1800);
    for (const c of split.values()) expect(Math.abs(c - 3000)).toBeLessThan(250);
  });

  it('moves only nodes to the joining member when one joins', () => {
    const joined = [...members, 'prov-d.example.net'];
    let gained = 0;
    for (const n of nodes) {
      const after = rendezvousOwner(n, joined);
      if (after === 'prov-d.example.net') gained++;
      else expect(after).toBe(rendezvousOwner(n, members));
    }
    expect(Math.abs(gained - 1500)).toBeLessThan(200);
  });

  it('gives a lone member everything and refuses an empty list', () => {
    expect(rendezvousOwner('x', ['only'])).toBe('only');
    expect(() => rendezvousOwner('x', [])).toThrow('at least one member');
  });
});

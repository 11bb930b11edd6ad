import { nodeIdentity as id } from '../../../src/choria/identity.js';
import { describe, expect, it } from 'vitest';
import { ForeignNodes } from '../../../src/provisioner/coordination/foreign-nodes.js';

describe('ForeignNodes', () => {
  it('keeps the latest sighting, forgets the unseen and the oldest beyond capacity', () => {
    const f = new ForeignNodes(3);
    f.note(id('a'), 'discovery', 1, '0.29.0');
    f.note(id('b'), 'event', 2);
    f.note(id('a'), 'discovery', 3); // seen again: young again, version kept
    f.note(id('c'), 'discovery', 4);
    expect(f.forgetOlderThan(3)).toBe(1); // b (seen at 2)
    expect(f.size).toBe(2);
    f.note(id('d'), 'discovery', 5);
    f.note(id('e'), 'discovery', 6); // capacity 3: the oldest (a) goes
    expect(f.takeWhere(() => true).map((n) => n.identity)).toEqual(['c', 'd', 'e']);
    expect(f.size).toBe(0);
  });

  it('hands over what the predicate takes and keeps the rest', () => {
    const f = new ForeignNodes(10);
    for (const n of ['a', 'b', 'c']) f.note(id(n), 'discovery', 1, n === 'b' ? '0.28.0' : undefined);
    const taken = f.takeWhere((id) => id !== 'a');
    expect(taken).toEqual([
      { identity: 'b', source: 'discovery', seenAt: 1, reportedVersion: '0.28.0' },
      { identity: 'c', source: 'discovery', seenAt: 1, reportedVersion: undefined },
    ]);
    expect(f.delete('a')).toBe(true);
    expect(f.delete('a')).toBe(false);
  });
});

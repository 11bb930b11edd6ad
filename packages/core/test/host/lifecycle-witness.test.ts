import { describe, expect, it } from 'vitest';
import { LifecycleWitness } from '../../src/host/lifecycle-witness.js';

describe('LifecycleWitness', () => {
  it('proves an action only with an event of the right type that arrived after the request', () => {
    const w = new LifecycleWitness();
    w.record('n1', 'provisioned', 100);
    expect(w.sawSince('n1', ['provisioned'], 100)).toBe(true);
    expect(w.sawSince('n1', ['provisioned'], 101)).toBe(false); // older than the request
    expect(w.sawSince('n1', ['shutdown'], 0)).toBe(false);
    expect(w.sawSince('n2', ['provisioned'], 0)).toBe(false);
    w.record('n1', 'shutdown', 200);
    expect(w.sawSince('n1', ['upgraded', 'shutdown'], 150)).toBe(true);
  });

  it('stays bounded: old entries and the oldest beyond maxNodes are forgotten', () => {
    const w = new LifecycleWitness({ maxAgeMs: 1000, maxNodes: 3 });
    for (let i = 0; i < 5; i++) w.record(`n${i}`, 'shutdown', 10 + i);
    expect(w.size).toBe(3);
    expect(w.sawSince('n0', ['shutdown'], 0)).toBe(false);
    expect(w.sawSince('n4', ['shutdown'], 0)).toBe(true);
    // a node seen again moves to the back of the line
    w.record('n2', 'provisioned', 20);
    w.record('n9', 'shutdown', 21);
    expect(w.sawSince('n2', ['provisioned'], 0)).toBe(true);
    expect(w.sawSince('n3', ['shutdown'], 0)).toBe(false);
    // everything older than maxAgeMs goes with the next record
    w.record('late', 'startup', 5000);
    expect(w.size).toBe(1);
  });
});

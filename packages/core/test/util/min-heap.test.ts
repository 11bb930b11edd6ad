import { describe, expect, it } from 'vitest';
import { MinHeap } from '../../src/util/min-heap.js';

describe('MinHeap', () => {
  it('gives the items back smallest key first, whatever order they came in', () => {
    const h = new MinHeap<string>();
    const keys = [50, 3, 27, 3, 99, 1, 64, 8, 8, 42];
    keys.forEach((k, i) => h.push(k, `${k}:${i}`));
    expect(h.size).toBe(keys.length);
    const out: number[] = [];
    for (let item = h.pop(); item !== undefined; item = h.pop()) out.push(Number(item.split(':')[0]));
    expect(out).toEqual([...keys].sort((a, b) => a - b));
    expect(h.peekKey()).toBeUndefined();
  });

  it('popUpTo takes exactly the items due by the limit', () => {
    const h = new MinHeap<number>();
    for (const k of [30, 10, 20, 40]) h.push(k, k);
    expect(h.popUpTo(25)).toEqual([10, 20]);
    expect(h.popUpTo(25)).toEqual([]);
    expect(h.peekKey()).toBe(30);
    h.clear();
    expect(h.size).toBe(0);
  });
});

// Seeded pseudo-random numbers for the simulator's behavioural choices (drops, latency jitter, splay,
// boot offsets, which nodes are silent or vanish), so a run can be repeated with the same seed.
// Key material is never drawn from here: it always comes from node:crypto.
import { randomInt } from 'node:crypto';

/** A small, fast 32-bit generator (mulberry32); statistical quality is ample for simulation. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** uniform in [0, 1) */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** uniform integer in [0, n) (0 when n <= 0) */
  int(n: number): number {
    return n <= 0 ? 0 : Math.floor(this.next() * n);
  }

  /** true with probability p */
  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }
}

/** Derives an independent seed for a sub-stream (e.g. one node) from a fleet seed. */
export function deriveSeed(seed: number, stream: number, salt = 0): number {
  let h = (seed ^ Math.imul(stream + 1, 0x9e3779b1) ^ Math.imul(salt + 1, 0x85ebca6b)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

export function randomSeed(): number {
  return randomInt(0, 2 ** 32 - 1);
}

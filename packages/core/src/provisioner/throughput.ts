// What a site finished over the last minutes, in fixed slots, for the status page's chart: a ring
// of counters, so noting an outcome is two array writes and the memory never grows.
import type { OutcomeMeaning } from '../host/types.js';

export interface ThroughputSeries {
  /** the length of one slot in ms */
  readonly slotMs: number;
  /** per slot, oldest first; the last slot is the current one (still filling) */
  readonly provisioned: readonly number[];
  readonly failed: readonly number[];
}

export class RecentThroughput {
  readonly #slotMs: number;
  readonly #provisioned: number[];
  readonly #failed: number[];
  /** the slot number (time / slotMs) the ring's newest entry counts */
  #newest: number;

  constructor(slotMs = 10_000, slots = 60, now = Date.now()) {
    this.#slotMs = slotMs;
    this.#provisioned = new Array<number>(slots).fill(0);
    this.#failed = new Array<number>(slots).fill(0);
    this.#newest = Math.floor(now / slotMs);
  }

  /** an attempt ended: a success (provisioned, shut down, upgraded) or a failure counts, a neutral outcome does not */
  note(meaning: OutcomeMeaning, now = Date.now()): void {
    if (meaning === 'neutral') return;
    const i = this.#advance(now);
    if (meaning === 'success') this.#provisioned[i] = (this.#provisioned[i] ?? 0) + 1;
    else this.#failed[i] = (this.#failed[i] ?? 0) + 1;
  }

  series(now = Date.now()): ThroughputSeries {
    const newest = this.#advance(now);
    const n = this.#provisioned.length;
    const order = Array.from({ length: n }, (_, k) => (newest + 1 + k) % n);
    return {
      slotMs: this.#slotMs,
      provisioned: order.map((i) => this.#provisioned[i] ?? 0),
      failed: order.map((i) => this.#failed[i] ?? 0),
    };
  }

  /** Moves the ring on to `now`'s slot, zeroing the slots passed over; returns its index. */
  #advance(now: number): number {
    const n = this.#provisioned.length;
    const slot = Math.floor(now / this.#slotMs);
    for (let s = this.#newest + 1; s <= slot && s <= this.#newest + n; s++) {
      this.#provisioned[s % n] = 0;
      this.#failed[s % n] = 0;
    }
    if (slot > this.#newest) this.#newest = slot;
    return this.#newest % n;
  }
}

// A binary min-heap of items keyed by a number (a deadline, say): adding and taking the smallest
// are O(log n), so a list of 50,000 waits, each of its own length, is swept without sorting it.

export class MinHeap<T> {
  readonly #keys: number[] = [];
  readonly #items: T[] = [];

  get size(): number {
    return this.#items.length;
  }

  push(key: number, item: T): void {
    this.#keys.push(key);
    this.#items.push(item);
    this.#up(this.#items.length - 1);
  }

  /** The smallest key, or undefined when empty. */
  peekKey(): number | undefined {
    return this.#keys[0];
  }

  /** Removes and returns the item with the smallest key (undefined when empty). */
  pop(): T | undefined {
    const n = this.#items.length;
    if (n === 0) return undefined;
    const top = this.#items[0] as T;
    const lastKey = this.#keys.pop() as number;
    const lastItem = this.#items.pop() as T;
    if (n > 1) {
      this.#keys[0] = lastKey;
      this.#items[0] = lastItem;
      this.#down(0);
    }
    return top;
  }

  /** Removes and returns, smallest key first, every item whose key is at most `limit`. */
  popUpTo(limit: number): T[] {
    const out: T[] = [];
    for (let key = this.peekKey(); key !== undefined && key <= limit; key = this.peekKey()) out.push(this.pop() as T);
    return out;
  }

  clear(): void {
    this.#keys.length = 0;
    this.#items.length = 0;
  }

  #swap(a: number, b: number): void {
    [this.#keys[a], this.#keys[b]] = [this.#keys[b] as number, this.#keys[a] as number];
    [this.#items[a], this.#items[b]] = [this.#items[b] as T, this.#items[a] as T];
  }

  #key(i: number): number {
    return this.#keys[i] as number;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#key(parent) <= this.#key(i)) return;
      this.#swap(parent, i);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#keys.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < n && this.#key(left) < this.#key(least)) least = left;
      if (right < n && this.#key(right) < this.#key(least)) least = right;
      if (least === i) return;
      this.#swap(least, i);
      i = least;
    }
  }
}

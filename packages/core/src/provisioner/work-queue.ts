// A bounded FIFO of work items with waiting consumers. Ring buffer, so 50,000 entries cost one array
// and pushes/pops are O(1) without shifting.
import { ProvisionerError } from '../util/errors.js';

export class QueueFullError extends ProvisionerError {
  constructor(
    readonly length: number,
    readonly capacity: number,
  ) {
    super(`work queue is full with ${length} / ${capacity} entries`);
  }
}

export class QueueClosedError extends ProvisionerError {
  constructor() {
    super('work queue is closed');
  }
}

export class WorkQueue<T> {
  readonly capacity: number;
  readonly #items: (T | undefined)[];
  #head = 0;
  #length = 0;
  #closed = false;
  readonly #waiters: { resolve: (v: T) => void; reject: (e: Error) => void }[] = [];

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new Error(`work queue capacity must be a positive integer, got ${capacity}`);
    this.capacity = capacity;
    this.#items = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.#length;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Adds an item; a waiting consumer gets it at once. Throws QueueFullError when full. */
  push(item: T): void {
    if (!this.#handedToWaiter(item)) this.#items[(this.#head + this.#length - 1) % this.capacity] = item;
  }

  /**
   * Adds an item to be taken before every other one (the newest first among such items); a
   * waiting consumer gets it at once. Throws QueueFullError when full.
   */
  pushFront(item: T): void {
    if (this.#handedToWaiter(item)) return;
    this.#head = (this.#head - 1 + this.capacity) % this.capacity;
    this.#items[this.#head] = item;
  }

  /** Gives `item` to a waiting consumer (true), or makes room for it (the caller places it): checks closed and full. */
  #handedToWaiter(item: T): boolean {
    if (this.#closed) throw new QueueClosedError();
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      waiter.resolve(item);
      return true;
    }
    if (this.#length >= this.capacity) throw new QueueFullError(this.#length, this.capacity);
    this.#length++;
    return false;
  }

  /** Takes the oldest item, waiting for one if empty. Rejects with QueueClosedError after close(). */
  pop(): Promise<T> {
    if (this.#length > 0) {
      const item = this.#items[this.#head] as T;
      this.#items[this.#head] = undefined;
      this.#head = (this.#head + 1) % this.capacity;
      this.#length--;
      return Promise.resolve(item);
    }
    if (this.#closed) return Promise.reject(new QueueClosedError());
    return new Promise((resolve, reject) => this.#waiters.push({ resolve, reject }));
  }

  /**
   * Takes the oldest item like pop(), but resolves to undefined once the queue is closed (a consumer's signal to end).
   */
  async next(): Promise<T | undefined> {
    try {
      return await this.pop();
    } catch (err) {
      if (err instanceof QueueClosedError) return undefined;
      throw err;
    }
  }

  /** Drops every queued item (waiting consumers keep waiting). */
  clear(): number {
    const n = this.#length;
    this.#items.fill(undefined);
    this.#head = 0;
    this.#length = 0;
    return n;
  }

  /** Stops intake and wakes every waiting consumer with QueueClosedError. */
  close(): void {
    this.#closed = true;
    this.clear();
    for (const w of this.#waiters.splice(0)) w.reject(new QueueClosedError());
  }
}

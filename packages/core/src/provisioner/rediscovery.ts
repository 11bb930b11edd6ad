// Discovery again after the broker link comes back. The `startup` events of servers that booted
// while it was down, or just before it went, died with the broker, and the interval's next
// discovery can be many minutes away: such servers would wait unseen until then. So discover
// once the servers have had time to reconnect (they do on their own schedule), and once more for
// the slow ones. A discovery costs one broadcast; a node already known is not offered twice.

/** After a reconnect: when the servers should be back, and once more for stragglers. */
export const REDISCOVERY_DELAYS_MS: readonly number[] = [5_000, 15_000];

export class RediscoveryAfterReconnect {
  readonly #discover: () => unknown;
  readonly #delaysMs: readonly number[];
  #timers: ReturnType<typeof setTimeout>[] = [];

  constructor(discover: () => unknown, delaysMs: readonly number[] = REDISCOVERY_DELAYS_MS) {
    this.#discover = discover;
    this.#delaysMs = delaysMs;
  }

  /** The link is back: (re)schedules the discoveries, counted from now. */
  linkRestored(): void {
    this.stop();
    this.#timers = this.#delaysMs.map((ms) => {
      const t = setTimeout(() => void this.#discover(), ms);
      t.unref();
      return t;
    });
  }

  stop(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers = [];
  }
}

// Discovery again after the broker link comes back. The `startup` events of servers that booted
// while it was down, or just before it went, died with the broker, and the interval's next
// discovery can be many minutes away: such servers would wait unseen until then. So discover
// once the servers have had time to reconnect (they do on their own schedule), and once more for
// the slow ones. A discovery costs one broadcast; a node already known is not offered twice.

/** After a reconnect: when the servers should be back (the link's fleet-reconnect time), and again for stragglers. */
export function rediscoveryDelaysMs(fleetReconnectMs: number): readonly number[] {
  return [fleetReconnectMs, 3 * fleetReconnectMs];
}

export class RediscoveryAfterReconnect {
  readonly #discover: () => unknown;
  readonly #delaysMs: readonly number[] | undefined;
  #timers: ReturnType<typeof setTimeout>[] = [];

  /** `delaysMs`: other delays than the link's (tests) */
  constructor(discover: () => unknown, delaysMs?: readonly number[]) {
    this.#discover = discover;
    this.#delaysMs = delaysMs;
  }

  /** The link is back: (re)schedules the discoveries, counted from now. */
  linkRestored(fleetReconnectMs: number): void {
    this.stop();
    this.#timers = (this.#delaysMs ?? rediscoveryDelaysMs(fleetReconnectMs)).map((ms) => {
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

/**
 * Discovery again once this instance may change nodes after its right to act lapsed (lease.ts).
 * While the lease is out (the process was paused, or cut off for less than the others take to
 * give its share away) its attempts end cancelled and its queued nodes are let go. When no other
 * instance took them over meanwhile, nothing would offer them again until the next interval, which
 * can be many minutes away: so one discovery, as soon as the right to act holds again.
 */
export class RediscoveryAfterLapse {
  readonly #discover: () => unknown;
  readonly #mayAct: () => boolean;
  #letGo = false;

  constructor(discover: () => unknown, mayAct: () => boolean) {
    this.#discover = discover;
    this.#mayAct = mayAct;
  }

  /** Nodes were let go (an attempt cut short, a queued node dropped) because the right to act lapsed. */
  letGo(): void {
    this.#letGo = true;
  }

  /** Asked periodically: discovers once when nodes were let go and the right to act holds again; true when it did. */
  check(): boolean {
    if (!this.#letGo || !this.#mayAct()) return false;
    this.#letGo = false;
    void this.#discover();
    return true;
  }
}

// The broker link of one client: the one owner of "is the link up", "how often did it change"
// and "has it settled". After a broker outage the provisioner is back first; the servers in
// provisioning mode reconnect on their own schedule, so for a while (the fleet-reconnect time)
// after the link returns a node that does not answer may simply not be back yet. Every decision
// that reads silence (the lost-reply watch, the liveness check, the quick tries, the ping before
// a change, rediscovery) asks this object, with its one fleet-reconnect setting.

/** After the link comes back, how long the servers are given to reconnect too (the default). */
export const FLEET_RECONNECT_MS = 5_000;

/** A snapshot of the link. */
export interface LinkState {
  readonly up: boolean;
  /** drops and returns since the client started: the link's epoch */
  readonly changes: number;
  /** when it last came up (performance.now()) */
  readonly upSince: number;
}

/**
 * Whether silence seen between `before` and `after` (taken at `at`) can say anything about a node:
 * the link stayed up, and either it never dropped or it came back long enough ago for the servers
 * to be on it again.
 */
export function linkSettled(
  before: LinkState,
  after: LinkState,
  fleetReconnectMs: number,
  at = performance.now(),
): boolean {
  if (!before.up || !after.up || after.changes !== before.changes) return false;
  return after.changes === 0 || at - after.upSince >= fleetReconnectMs;
}

export interface BrokerLinkOptions {
  /** how long the servers are given to reconnect after the link returns (default FLEET_RECONNECT_MS) */
  readonly fleetReconnectMs?: number;
  /** whether the connection is closed for good (then the link is down) */
  readonly closed: () => boolean;
}

export class BrokerLink {
  readonly fleetReconnectMs: number;
  readonly #closed: () => boolean;
  readonly #restoredListeners = new Set<() => void>();
  #changes = 0;
  #upSince = performance.now();
  /** when the link dropped, while it is down */
  #droppedAt: number | undefined;

  constructor(opts: BrokerLinkOptions) {
    this.fleetReconnectMs = opts.fleetReconnectMs ?? FLEET_RECONNECT_MS;
    this.#closed = opts.closed;
  }

  get state(): LinkState {
    return { up: this.#droppedAt === undefined && !this.#closed(), changes: this.#changes, upSince: this.#upSince };
  }

  /** Whether silence seen since `before` (a snapshot) can say anything about a node, as of `at`. */
  settledSince(before: LinkState, at = performance.now()): boolean {
    return linkSettled(before, this.state, this.fleetReconnectMs, at);
  }

  /** Whether silence seen from now on can say anything about a node. */
  get settled(): boolean {
    return this.settledSince(this.state);
  }

  /**
   * Calls `listener` whenever the link comes back after it dropped (what was published meanwhile,
   * requests, replies and the fleet's lifecycle events, is lost); returns the undo.
   */
  onRestored(listener: () => void): () => void {
    this.#restoredListeners.add(listener);
    return () => this.#restoredListeners.delete(listener);
  }

  /** The connection dropped (the client's status loop tells). */
  dropped(): void {
    this.#changes++;
    this.#droppedAt ??= performance.now();
  }

  /** The connection is back; true when it had dropped (the listeners were called). */
  restored(): boolean {
    this.#changes++;
    this.#upSince = performance.now();
    const dropped = this.#droppedAt;
    this.#droppedAt = undefined;
    if (dropped === undefined) return false;
    for (const listener of this.#restoredListeners) listener();
    return true;
  }
}

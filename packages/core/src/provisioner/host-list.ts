// The provisioner's active list keyed by identity: nodes queued, being provisioned, held after
// success or waiting for another provisioner's lock. What happened to a node before is its
// history (history/node-history.ts).

export type ActiveState = 'queued' | 'provisioning' | 'held' | 'locked';
/** how a node got on the list: discovery, a startup event, or an operator's retry */
export type DiscoverySource = 'discovery' | 'event' | 'operator';

export interface HostEntry {
  readonly identity: string;
  /** distinguishes a re-added entry from a stale queue item of the same identity */
  readonly generation: number;
  discoveredAt: number;
  source: DiscoverySource;
  state: ActiveState;
  step: string | undefined;
  attempts: number;
  updatedAt: number;
  /** state held: end of the post-success hold; state locked: when the lock wait ends */
  heldUntil: number | undefined;
  abort: AbortController | undefined;
  /** the go-choria version of the node's latest startup event (HostJob.reportedVersion) */
  reportedVersion: string | undefined;
}

export type OfferResult = 'added' | 'refreshed' | 'known';

export class HostList {
  readonly #active = new Map<string, HostEntry>();
  #generation = 0;

  get size(): number {
    return this.#active.size;
  }

  get(identity: string): HostEntry | undefined {
    return this.#active.get(identity);
  }

  /**
   * Offers a node. A known identity is not added twice. Upstream meant to re-add entries older than one
   * interval but compared the wrong timestamps, so it never did. Here a
   * still-queued entry older than `refreshAfterMs` gets a fresh discovery time, which is what that
   * intent protects: a long queue no longer makes waiting nodes "stale" while they are being seen.
   * `pastAttempts`: the node's attempts so far (its history), which a new entry counts on from.
   */
  offer(identity: string, source: DiscoverySource, now: number, refreshAfterMs: number, pastAttempts = 0, reportedVersion?: string): { result: OfferResult; entry: HostEntry } {
    const existing = this.#active.get(identity);
    if (existing !== undefined) {
      if (reportedVersion !== undefined) existing.reportedVersion = reportedVersion;
      if ((existing.state === 'queued' || existing.state === 'locked') && now - existing.discoveredAt > refreshAfterMs) {
        existing.discoveredAt = now;
        existing.updatedAt = now;
        return { result: 'refreshed', entry: existing };
      }
      return { result: 'known', entry: existing };
    }
    const entry: HostEntry = {
      identity,
      generation: ++this.#generation,
      discoveredAt: now,
      source,
      state: 'queued',
      step: undefined,
      attempts: pastAttempts,
      updatedAt: now,
      heldUntil: undefined,
      abort: undefined,
      reportedVersion,
    };
    this.#active.set(identity, entry);
    return { result: 'added', entry };
  }

  /** true when the entry is still the live one for its identity (queue items can outlive it) */
  isCurrent(entry: HostEntry): boolean {
    return this.#active.get(entry.identity) === entry;
  }

  remove(entry: HostEntry): void {
    if (this.isCurrent(entry)) this.#active.delete(entry.identity);
  }

  /** Forgets every active entry (leadership lost); returns the in-flight ones so they can be aborted. */
  clear(): HostEntry[] {
    const all = [...this.#active.values()];
    this.#active.clear();
    return all;
  }

  active(): IterableIterator<HostEntry> {
    return this.#active.values();
  }
}

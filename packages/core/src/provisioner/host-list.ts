// The provisioner's knowledge of nodes: the active list keyed by identity (queued, being provisioned,
// or held after success), plus a bounded memory of recent outcomes for the status view.
import type { Outcome } from '../host/types.js';

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

export interface PastOutcome {
  readonly identity: string;
  readonly outcome: Outcome;
  readonly at: number;
  readonly attempts: number;
  readonly message: string | undefined;
  /** how long the attempt took, in ms */
  readonly durationMs: number;
}

export type OfferResult = 'added' | 'refreshed' | 'known';

export class HostList {
  readonly #active = new Map<string, HostEntry>();
  readonly #history = new Map<string, PastOutcome>();
  readonly #attempts = new Map<string, number>();
  /** nodes configured by an attempt that then failed, and when (HostJob.configuredAt) */
  readonly #configuredAt = new Map<string, number>();
  readonly #historyLimit: number;
  #generation = 0;

  constructor(historyLimit = 10_000) {
    this.#historyLimit = historyLimit;
  }

  get size(): number {
    return this.#active.size;
  }

  get(identity: string): HostEntry | undefined {
    return this.#active.get(identity);
  }

  /**
   * Offers a node. A known identity is not added twice. Upstream meant to re-add entries older than one
   * interval but compared the wrong timestamps, so it never did (product.md §5.4 quirk 3). Here a
   * still-queued entry older than `refreshAfterMs` gets a fresh discovery time, which is what that
   * intent protects: a long queue no longer makes waiting nodes "stale" while they are being seen.
   */
  offer(identity: string, source: DiscoverySource, now: number, refreshAfterMs: number, reportedVersion?: string): { result: OfferResult; entry: HostEntry } {
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
      attempts: this.#attempts.get(identity) ?? 0,
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

  record(entry: HostEntry, outcome: Outcome, message: string | undefined, now: number, configured = false, durationMs = 0): void {
    this.#attempts.set(entry.identity, entry.attempts);
    this.#configuredAt.delete(entry.identity);
    if (configured && outcome === 'failed') this.#configuredAt.set(entry.identity, now);
    this.#history.delete(entry.identity);
    this.#history.set(entry.identity, { identity: entry.identity, outcome, at: now, attempts: entry.attempts, message, durationMs });
    while (this.#history.size > this.#historyLimit) {
      const oldest = this.#history.keys().next().value as string;
      this.#history.delete(oldest);
      this.#attempts.delete(oldest);
      this.#configuredAt.delete(oldest);
    }
  }

  /** When an earlier attempt configured `identity` without restarting it, if that is still known. */
  configuredAt(identity: string): number | undefined {
    return this.#configuredAt.get(identity);
  }

  /** The node booted again: whatever it was configured with before is no longer a given. */
  forgetConfigured(identity: string): void {
    this.#configuredAt.delete(identity);
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

  history(): IterableIterator<PastOutcome> {
    return this.#history.values();
  }

  pastOutcome(identity: string): PastOutcome | undefined {
    return this.#history.get(identity);
  }
}

// The nodes this instance is working on, keyed by identity: queued, being provisioned, held after
// a success, or waiting out another provisioner's lock. The list owns every entry's state and
// moves it from one state to the next; the rest of the provisioner reads entries and asks for
// transitions. Each wait (the hold, the lock wait) is a deadline of its own in a min-heap, so the
// waits need not be of one length. What happened to a node before is its history
// (history/node-history.ts).
import type { NodeIdentity } from '../choria/identity.js';
import { OUTCOME_RULES, type Outcome } from '../host/types.js';
import { MinHeap } from '../util/min-heap.js';

export type ActiveState = 'queued' | 'provisioning' | 'held' | 'locked';
/** how a node got on the list: discovery, a startup event, or an operator's retry */
export type DiscoverySource = 'discovery' | 'event' | 'operator';

/** A node on the active list, as the rest of the provisioner sees it: read-only. */
export interface ActiveEntry {
  readonly identity: NodeIdentity;
  /** distinguishes a re-added entry from a stale queue item of the same identity */
  readonly generation: number;
  readonly discoveredAt: number;
  readonly source: DiscoverySource;
  readonly state: ActiveState;
  readonly step: string | undefined;
  readonly attempts: number;
  readonly updatedAt: number;
  /** state held: end of the post-success hold; state locked: when the lock wait ends */
  readonly waitEndsAt: number | undefined;
  /** the go-choria version of the node's latest startup event (HostJob.reportedVersion) */
  readonly reportedVersion: string | undefined;
  /**
   * A startup event of the node came while it was being provisioned: it started again in
   * provisioning mode before the attempt ended (an upgrade that came back faster than its reply
   * was handled, a reboot). Such an event cannot add the node then; the attempt's end does.
   */
  readonly startedDuringAttempt: boolean;
}

/** A wait on the deadline heap; an entry knows its current one, so a superseded wait is skipped. */
interface Wait {
  readonly entry: Entry;
}

type Entry = { -readonly [K in keyof ActiveEntry]: ActiveEntry[K] } & {
  abort: AbortController | undefined;
  wait: Wait | undefined;
};

export type OfferResult = 'added' | 'refreshed' | 'known';

/** Queued or waiting for a lock: on the list but neither in flight nor held after a success. */
export function isWaiting(entry: ActiveEntry): boolean {
  return entry.state === 'queued' || entry.state === 'locked';
}

export interface ActiveListOptions {
  /** how long a node stays held after a success that restarts or shuts it down */
  readonly holdMs: number;
  /** how long an owned node waits for another provisioner's lock before it is tried again */
  readonly lockRetryMs: number;
}

/** What the deadlines that passed did: holds that ended (those entries left) and lock waits that ended. */
export interface DueWaits {
  readonly released: number;
  readonly lockWaitsOver: readonly ActiveEntry[];
}

export class ActiveList {
  readonly #active = new Map<string, Entry>();
  readonly #deadlines = new MinHeap<Wait>();
  readonly #opts: ActiveListOptions;
  #generation = 0;

  constructor(opts: ActiveListOptions) {
    this.#opts = opts;
  }

  get size(): number {
    return this.#active.size;
  }

  get(identity: string): ActiveEntry | undefined {
    return this.#active.get(identity);
  }

  entries(): IterableIterator<ActiveEntry> {
    return this.#active.values();
  }

  /** true when the entry is still the live one for its identity (queue items can outlive it) */
  isCurrent(entry: ActiveEntry): boolean {
    return this.#active.get(entry.identity) === entry;
  }

  /**
   * Offers a node. A known identity is not added twice. Upstream meant to re-add entries older than one
   * interval but compared the wrong timestamps, so it never did. Here a
   * still-queued entry older than `refreshAfterMs` gets a fresh discovery time, which is what that
   * intent protects: a long queue no longer makes waiting nodes "stale" while they are being seen.
   * `pastAttempts`: the node's attempts so far (its history), which a new entry counts on from.
   */
  offer(
    identity: NodeIdentity,
    source: DiscoverySource,
    now: number,
    refreshAfterMs: number,
    pastAttempts = 0,
    reportedVersion?: string,
  ): { result: OfferResult; entry: ActiveEntry } {
    const existing = this.#active.get(identity);
    if (existing !== undefined) {
      if (reportedVersion !== undefined) existing.reportedVersion = reportedVersion;
      if (source === 'event' && existing.state === 'provisioning') existing.startedDuringAttempt = true;
      if (isWaiting(existing) && now - existing.discoveredAt > refreshAfterMs) {
        existing.discoveredAt = now;
        existing.updatedAt = now;
        return { result: 'refreshed', entry: existing };
      }
      return { result: 'known', entry: existing };
    }
    const entry: Entry = {
      identity,
      generation: ++this.#generation,
      discoveredAt: now,
      source,
      state: 'queued',
      step: undefined,
      attempts: pastAttempts,
      updatedAt: now,
      waitEndsAt: undefined,
      reportedVersion,
      startedDuringAttempt: false,
      abort: undefined,
      wait: undefined,
    };
    this.#active.set(identity, entry);
    return { result: 'added', entry };
  }

  /** Takes the entry off the list; false when it was not the live one (replaced or dropped before). */
  remove(entry: ActiveEntry): boolean {
    const own = this.#own(entry);
    if (own === undefined) return false;
    own.wait = undefined;
    this.#active.delete(own.identity);
    return true;
  }

  /**
   * A worker starts an attempt on the entry: it is being provisioned, one attempt more. Returns
   * the attempt's abort controller, or undefined when the entry is no longer the live one.
   */
  startAttempt(entry: ActiveEntry, now: number): AbortController | undefined {
    const own = this.#own(entry);
    if (own === undefined) return undefined;
    own.state = 'provisioning';
    own.attempts++;
    own.updatedAt = now;
    own.abort = new AbortController();
    return own.abort;
  }

  /** The attempt reports the step it works on, for the status view. */
  noteStep(entry: ActiveEntry, step: string, now: number): void {
    const own = this.#own(entry);
    if (own === undefined) return;
    own.step = step;
    own.updatedAt = now;
  }

  /**
   * The entry's next state once its attempt ended with `outcome`: held when the outcome restarts
   * or shuts the node down (so a discovery during the restart does not take it again), waiting
   * for the lock when another provisioner holds it and `waitForLock` (this instance owns the node
   * and the members agree on owners), else off the list. Undefined when the entry was replaced
   * or dropped while the attempt ran.
   */
  settle(entry: ActiveEntry, outcome: Outcome, now: number, waitForLock: boolean): ActiveState | 'removed' | undefined {
    const own = this.#own(entry);
    if (own === undefined) return undefined;
    own.step = undefined;
    own.abort = undefined;
    own.updatedAt = now;
    if (OUTCOME_RULES[outcome].holdsNode) return this.#waitUntil(own, 'held', now + this.#opts.holdMs);
    if (outcome === 'skipped_locked' && waitForLock)
      return this.#waitUntil(own, 'locked', now + this.#opts.lockRetryMs);
    this.remove(own);
    return 'removed';
  }

  /** A lock wait is over and the node goes back into the queue. */
  requeue(entry: ActiveEntry, now: number): void {
    const own = this.#own(entry);
    if (own === undefined) return;
    own.state = 'queued';
    own.waitEndsAt = undefined;
    own.wait = undefined;
    own.updatedAt = now;
  }

  /**
   * Ends the waits whose deadline is `now` or earlier: a held entry leaves the list; an entry
   * that waited for a lock is returned for the scheduler to queue again or hand over.
   */
  takeDue(now: number): DueWaits {
    let released = 0;
    const lockWaitsOver: Entry[] = [];
    for (const wait of this.#deadlines.popUpTo(now)) {
      const e = wait.entry;
      // superseded: removed, replaced, or moved on to another state since
      if (e.wait !== wait || !this.isCurrent(e)) continue;
      e.wait = undefined;
      if (e.state === 'held') {
        this.remove(e);
        released++;
      } else {
        lockWaitsOver.push(e);
      }
    }
    return { released, lockWaitsOver };
  }

  /** Aborts every attempt in flight (the entries stay: their attempts end and settle them). */
  abortAttempts(reason: Error): void {
    for (const e of this.#active.values()) e.abort?.abort(reason);
  }

  /** Forgets every entry (leadership lost) and aborts the attempts in flight. */
  clear(reason: Error): number {
    const all = [...this.#active.values()];
    this.#active.clear();
    this.#deadlines.clear();
    for (const e of all) {
      e.wait = undefined;
      e.abort?.abort(reason);
    }
    return all.length;
  }

  #waitUntil(own: Entry, state: 'held' | 'locked', until: number): ActiveState {
    own.state = state;
    own.waitEndsAt = until;
    const wait: Wait = { entry: own };
    own.wait = wait;
    this.#deadlines.push(until, wait);
    return state;
  }

  /** The list's own (writable) entry for `entry`, when it is still the live one. */
  #own(entry: ActiveEntry): Entry | undefined {
    const own = this.#active.get(entry.identity);
    return own === entry ? own : undefined;
  }
}

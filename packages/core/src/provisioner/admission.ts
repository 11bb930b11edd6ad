// Admission: which identities heard of may take work. Anything holding the provisioning login can
// announce any number of names (startup events, answers to a broadcast discovery) that never
// answer; each used to take a queue slot, a worker for its liveness check and a history record.
// Now an identity the site does not know yet is a *candidate*: it costs one entry in a bounded
// set of its own and nothing else until it answers a directed discovery (a discovery whose
// identity filter names it; go-choria or's the entries, so one request asks a whole batch).
// Only an answer admits it to the provision list. What never answers is dropped after one ask:
// no worker, no queue slot, no record, no retry.
//
// Newest first: candidates are asked in the reverse order they were heard, and when the set is
// full the oldest waiting one makes room. A flood of names therefore never stands between a real
// server that announced itself after it and its admission: that server is in the next batch.
import type { NodeIdentity } from '../choria/identity.js';
import type { CandidateEnd } from '../metrics/metrics.js';
import type { DiscoverySource } from './active-list.js';

/** Candidates kept waiting to be asked; beyond, the oldest is crowded out. */
export const MAX_CANDIDATES = 10_000;
/** Identities one directed discovery asks for (its filter): a few tens of KB on the wire. */
export const CONFIRM_BATCH = 500;
/** Directed discoveries in flight at once. */
export const CONFIRM_CONCURRENCY = 4;
/**
 * Answered candidates offered per turn of the event loop: a burst of answers read at once is
 * offered a few dozen at a time, and what else came on the connection (a member's heartbeat, an
 * answer to another request) is read in between.
 */
export const ADMIT_BATCH = 50;

/** An identity heard of, and how. */
export interface Candidate {
  readonly identity: NodeIdentity;
  readonly source: DiscoverySource;
  readonly reportedVersion: string | undefined;
}

export interface AdmissionOptions {
  /** whether the site knows the node already (a record of it, or an entry in the provision list) */
  readonly knows: (identity: NodeIdentity) => boolean;
  /**
   * One directed discovery for `identities`: calls `answered` for each that answers, resolves when
   * it ends (a failure counts as no answer).
   */
  readonly confirm: (identities: readonly NodeIdentity[], answered: (identity: NodeIdentity) => void) => Promise<void>;
  /** a candidate answered: it is offered as any known node (true: it was added to the provision list) */
  readonly admit: (candidate: Candidate) => boolean;
  readonly ended: (how: CandidateEnd, n: number) => void;
  readonly size: (n: number) => void;
  readonly maxCandidates?: number;
  readonly batch?: number;
  readonly concurrency?: number;
}

/** A candidate in admission, with whoever waits to hear how it ended. */
interface Entry {
  readonly candidate: Candidate;
  readonly waiters: ((admitted: boolean) => void)[];
}

export class Admission {
  readonly #o: AdmissionOptions;
  readonly #max: number;
  readonly #batch: number;
  readonly #concurrency: number;
  /** waiting to be asked, oldest first (a candidate heard again moves to the end) */
  readonly #waiting = new Map<NodeIdentity, Entry>();
  /** asked, answer awaited */
  readonly #asking = new Map<NodeIdentity, Entry>();
  #inFlight = 0;
  #pumping: NodeJS.Immediate | undefined;
  /** answered, to be offered in batches */
  readonly #toAdmit: Entry[] = [];
  #admitting: NodeJS.Immediate | undefined;
  #stopped = false;

  constructor(o: AdmissionOptions) {
    this.#o = o;
    this.#max = o.maxCandidates ?? MAX_CANDIDATES;
    this.#batch = o.batch ?? CONFIRM_BATCH;
    this.#concurrency = o.concurrency ?? CONFIRM_CONCURRENCY;
  }

  /** candidates waiting or asked */
  get size(): number {
    return this.#waiting.size + this.#asking.size;
  }

  /**
   * An identity was heard of: 'known' when the site knows it (the caller offers it as before),
   * else it is a candidate until it answers ('candidate'). With `wait`, a promise of whether the
   * candidate answered and was added to the provision list (a discovery counts the nodes it added).
   */
  heard(candidate: Candidate, wait?: false): 'known' | 'candidate';
  heard(candidate: Candidate, wait: true): 'known' | Promise<boolean>;
  heard(candidate: Candidate, wait = false): 'known' | 'candidate' | Promise<boolean> {
    if (this.#o.knows(candidate.identity)) return 'known';
    if (this.#stopped) return wait ? Promise.resolve(false) : 'candidate';
    const entry = this.#asking.get(candidate.identity) ?? this.#enter(candidate);
    if (!wait) return 'candidate';
    return new Promise((resolve) => entry.waiters.push(resolve));
  }

  /** A candidate joins the waiting ones as the newest; the oldest makes room when they are too many. */
  #enter(candidate: Candidate): Entry {
    const known = this.#waiting.get(candidate.identity);
    const entry: Entry = { candidate, waiters: known?.waiters ?? [] };
    this.#waiting.delete(candidate.identity);
    this.#waiting.set(candidate.identity, entry);
    if (this.#waiting.size > this.#max) {
      const oldest = this.#waiting.keys().next().value as NodeIdentity;
      end(this.#waiting.get(oldest), false);
      this.#waiting.delete(oldest);
      this.#o.ended('crowded_out', 1);
    }
    this.#schedule();
    return entry;
  }

  /** Forgets every waiting candidate (a stop: what was heard is heard again by the next discovery). */
  clear(): void {
    clearImmediate(this.#pumping);
    this.#pumping = undefined;
    for (const entry of this.#waiting.values()) end(entry, false);
    this.#waiting.clear();
    this.#o.size(this.size);
  }

  stop(): void {
    this.#stopped = true;
    this.clear();
    clearImmediate(this.#admitting);
    for (const entry of this.#toAdmit.splice(0)) end(entry, false);
  }

  #schedule(): void {
    this.#o.size(this.size);
    this.#pumping ??= setImmediate(() => {
      this.#pumping = undefined;
      this.#pump();
    });
  }

  /** Asks the newest waiting candidates, a batch per directed discovery, while there is room in flight. */
  #pump(): void {
    while (!this.#stopped && this.#inFlight < this.#concurrency && this.#waiting.size > 0) {
      const batch = [...this.#waiting.keys()].slice(-this.#batch).reverse();
      const asked = new Map<NodeIdentity, Entry>();
      for (const id of batch) {
        const entry = this.#waiting.get(id) as Entry;
        this.#waiting.delete(id);
        asked.set(id, entry);
        this.#asking.set(id, entry);
      }
      void this.#ask(asked);
    }
  }

  #admitSome(): void {
    this.#admitting = undefined;
    for (const entry of this.#toAdmit.splice(0, ADMIT_BATCH))
      end(entry, !this.#stopped && this.#o.admit(entry.candidate));
    if (this.#toAdmit.length > 0) this.#admitting = setImmediate(() => this.#admitSome());
  }

  async #ask(asked: Map<NodeIdentity, Entry>): Promise<void> {
    this.#inFlight++;
    let admitted = 0;
    const answered = (identity: NodeIdentity): void => {
      const entry = asked.get(identity);
      if (entry === undefined) return; // not one asked for: an answer proves nothing about it
      asked.delete(identity);
      this.#asking.delete(identity);
      admitted++;
      this.#toAdmit.push(entry);
      this.#admitting ??= setImmediate(() => this.#admitSome());
    };
    try {
      await this.#o.confirm([...asked.keys()], answered);
    } catch {
      // a failed discovery: the candidates are dropped as unanswered, and heard again if real
    }
    for (const [id, entry] of asked) {
      this.#asking.delete(id);
      end(entry, false);
    }
    this.#inFlight--;
    if (admitted > 0) this.#o.ended('admitted', admitted);
    if (asked.size > 0) this.#o.ended('unanswered', asked.size);
    this.#schedule();
  }
}

function end(entry: Entry | undefined, admitted: boolean): void {
  for (const resolve of entry?.waiters.splice(0) ?? []) resolve(admitted);
}

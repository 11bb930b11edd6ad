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
import type { ChoriaClient } from '../choria/client.js';
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
  readonly source: Extract<DiscoverySource, 'event' | 'discovery'>;
  readonly reportedVersion: string | undefined;
}

export interface AdmissionOptions {
  /** whether the site knows the node already (a record of it, or an entry in the provision list) */
  readonly knows: (identity: NodeIdentity) => boolean;
  /**
   * A known identity equal to this one but for case (certificate names ignore case, so a helper
   * signing per identity would sign a second certificate valid for a provisioned server); leave it
   * out where the site admits such twins
   */
  readonly caseTwin?: (identity: NodeIdentity) => string | undefined;
  /** an identity is refused for `why` (logged within the budget and counted where refusals go) */
  readonly refuse: (identity: NodeIdentity, why: string, source: 'event' | 'discovery') => void;
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

/**
 * Admission's directed discovery on `client`: a discovery of the `choria_provision` agent whose
 * identity filter names the candidates. It ends once every name asked answered (not at a count of
 * answers: a stranger can answer too), else at the discovery's overall limit (no quiet spell after
 * a stranger's answer ends it early); a failure is no answer.
 */
export function confirmByDiscovery(
  client: () => ChoriaClient | undefined,
  stopped: AbortSignal,
): AdmissionOptions['confirm'] {
  return async (identities, answered) => {
    const c = client();
    if (c === undefined) return;
    const left = new Set<string>(identities);
    const allAnswered = new AbortController();
    const onFound = (identity: NodeIdentity): void => {
      answered(identity);
      if (left.delete(identity) && left.size === 0) allAnswered.abort();
    };
    const signal = AbortSignal.any([stopped, allAnswered.signal]);
    await c
      .discover({ agent: 'choria_provision', identityFilter: identities, onFound, listenToEnd: true, signal })
      .catch(() => undefined);
  };
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
  /** asked: the answer awaited, or answered and waiting in #toAdmit (heard again, it is not asked again) */
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
   * An identity was heard of: 'refused' when it is a case twin of a known node, 'known' when the
   * site knows it (the caller offers it as before), else it is a candidate until it answers
   * ('candidate'). With `wait`, a promise of whether the candidate answered and was added to the
   * provision list (a discovery counts the nodes it added).
   */
  heard(candidate: Candidate, wait?: false): 'refused' | 'known' | 'candidate';
  heard(candidate: Candidate, wait: true): 'refused' | 'known' | Promise<boolean>;
  heard(candidate: Candidate, wait = false): 'refused' | 'known' | 'candidate' | Promise<boolean> {
    const twin = this.#o.caseTwin?.(candidate.identity);
    if (twin !== undefined) {
      const why = `it equals the known node ${twin} but for case, and certificate names ignore case`;
      this.#o.refuse(candidate.identity, `${why} (identity_case_twins: true allows it)`, candidate.source);
      return 'refused';
    }
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

  /** Forgets every candidate (what was heard is heard again by the next discovery) and admits nothing more. */
  stop(): void {
    this.#stopped = true;
    clearImmediate(this.#pumping);
    clearImmediate(this.#admitting);
    for (const entry of this.#waiting.values()) end(entry, false);
    for (const entry of this.#toAdmit.splice(0)) {
      this.#asking.delete(entry.candidate.identity);
      end(entry, false);
    }
    this.#waiting.clear();
    this.#o.size(this.size);
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
    for (const entry of this.#toAdmit.splice(0, ADMIT_BATCH)) {
      this.#asking.delete(entry.candidate.identity);
      end(entry, !this.#stopped && this.#o.admit(entry.candidate));
    }
    if (this.#toAdmit.length > 0) this.#admitting = setImmediate(() => this.#admitSome());
  }

  async #ask(asked: Map<NodeIdentity, Entry>): Promise<void> {
    this.#inFlight++;
    let admitted = 0;
    const answered = (identity: NodeIdentity): void => {
      const entry = asked.get(identity);
      if (entry === undefined) return; // not one asked for: an answer proves nothing about it
      asked.delete(identity);
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

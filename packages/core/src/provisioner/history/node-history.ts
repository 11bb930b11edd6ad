// The site's per-node history as this instance knows it: one record a node, in memory, bounded in
// count and age, shared with the other instances of the site through a key-value bucket
// (bucket.ts) when there is one. Every change is made through shared-records.ts: applied here at
// once, and written to the bucket conditionally on the revision it was computed from, so a late
// write never rolls a newer record back; the bucket's versions come back through merge() and win
// by revision, never by clock.
//
// The back-off and quarantine state lives in the records too, so every instance of a site (and the
// next process after a restart) holds a failing node back the same way.
import type { IssuedCredentials } from '../../host/credentials.js';
import { outcomeMeaning, type Outcome } from '../../host/types.js';
import { backoffAfter, quarantines, type SetbackPolicy } from './backoff-policy.js';
import { boundedError, emptyRecord, encodeRecord, isRenewing, type NodeRecord } from './record.js';
import { SharedRecords, type ChangeHandle, type SendingRecord } from './shared-records.js';

export {
  HistoryWriteRefusedError,
  PROMPT_WRITE_MS,
  UNSTEADY_HOLD_MS,
  type SendingRecord,
  type ChangeHandle,
} from './shared-records.js';

/** Where records are written so other instances and later processes see them, with compare-and-set. */
export interface HistoryBacking {
  /**
   * Writes `record` if its key is still at `revision` (0: no key); resolves the new revision.
   * Rejects with RevisionConflictError (another revision is stored: it carries that version),
   * HistoryWriteRefusedError (this record can never be written), or any other error.
   */
  write(record: NodeRecord, revision: number): Promise<number>;
}

export interface NodeHistoryOptions {
  readonly policy: SetbackPolicy;
  /** the Choria identity recorded as the instance of this process's attempts */
  readonly instance: string;
  /** this process as a node claim names it (node-claims.ts processToken); the instance by default */
  readonly process?: string;
  /** a record unchanged for this long is forgotten (the bucket's max age does the same there) */
  readonly ttlMs: number;
  /** most records kept in memory; beyond it the least recently changed is forgotten */
  readonly capacity?: number;
  /** most writes in flight at once; the rest start as earlier ones finish */
  readonly maxWritesInFlight?: number;
  /** a write failed (the record stays pending and is written again by the next flush) */
  readonly onWriteError?: (err: unknown) => void;
  /** the backing refused a record for good (HistoryWriteRefusedError): it is not written again */
  readonly onWriteRefused?: (err: unknown) => void;
  /** a write succeeded (after failures: the shared copy is back) */
  readonly onWritten?: () => void;
  /** how long a node is left alone after a restart was sent to it (default RESTART_WINDOW_MS) */
  readonly restartWindowMs?: number;
  /** the monotonic clock write latencies are read on; performance.now by default */
  readonly monotonic?: () => number;
}

export interface SendingOptions {
  /** a configure: what it gives the node that expires */
  readonly credentials?: IssuedCredentials | undefined;
  /** wait for the shared copy even while it is slow (sharedCopyIsPrompt false): the send needs its record */
  readonly evenIfSlow?: boolean;
}

export interface AttemptReport {
  readonly outcome: Outcome;
  readonly message: string | undefined;
  /** when the attempt ended */
  readonly at: number;
  readonly durationMs: number;
  /** the attempt configured the node (a failed one may have left it configured but not restarted) */
  readonly configured: boolean;
  /** when this round found the node: the first seen time of a node without a record */
  readonly discoveredAt: number;
  /** a success that configured the node: what it was given that expires */
  readonly credentials?: IssuedCredentials | undefined;
}

/**
 * Why a node is not taken now: quarantined, backing off after failures, or restarting (a
 * `restart` was sent to it, by any instance, less than the restart window ago: it answers
 * discovery during its restart splay, but it is leaving provisioning mode).
 */
export type Deferral = 'quarantined' | 'backoff' | 'restarting';

/**
 * How long after a `restart` was sent a node is left alone: go-choria waits a random splay (2 s
 * for the splay of 1 the provisioner asks for, up to 12 s for other provisioners' default of 10)
 * holding its agent mutex, then starts again, which takes a few seconds more. A node that still
 * answers in provisioning mode after that did not restart into its configuration and is taken again.
 */
export const RESTART_WINDOW_MS = 20_000;

export const DEFAULT_HISTORY_CAPACITY = 100_000;
/** How many of the oldest records are looked at for one never provisioned when the history is full. */
const EVICTION_SCAN = 256;

export class NodeHistory {
  /** the visible records, in order of last change, oldest first (capacity and age evict from the front) */
  readonly #records = new Map<string, NodeRecord>();
  /** the identities recorded, by their lower-case form (certificate names ignore case) */
  readonly #byCase = new Map<string, string>();
  readonly #opts: NodeHistoryOptions;
  readonly #capacity: number;
  readonly #shared: SharedRecords<NodeRecord>;
  #quarantined = 0;
  readonly #restartWindowMs: number;
  readonly #process: string;

  constructor(opts: NodeHistoryOptions) {
    this.#opts = opts;
    this.#process = opts.process ?? opts.instance;
    this.#capacity = opts.capacity ?? DEFAULT_HISTORY_CAPACITY;
    this.#restartWindowMs = opts.restartWindowMs ?? RESTART_WINDOW_MS;
    this.#shared = new SharedRecords<NodeRecord>({
      same: sameRecord,
      onVisible: (id, record) => (record === undefined ? this.#drop(id) : this.#put(record)),
      ...(opts.maxWritesInFlight !== undefined ? { maxWritesInFlight: opts.maxWritesInFlight } : {}),
      ...(opts.monotonic !== undefined ? { monotonic: opts.monotonic } : {}),
      ...(opts.onWriteError !== undefined ? { onWriteError: opts.onWriteError } : {}),
      ...(opts.onWriteRefused !== undefined ? { onWriteRefused: opts.onWriteRefused } : {}),
      ...(opts.onWritten !== undefined ? { onWritten: opts.onWritten } : {}),
    });
  }

  /**
   * Whether a send should wait for its record to reach the shared copy: there is one, its writes
   * succeed, and none was slow or failed in the last UNSTEADY_HOLD_MS.
   */
  sharedCopyIsPrompt(): boolean {
    return this.#shared.isPrompt();
  }

  /** whether a shared copy is attached (history_store kv, bucket reached) */
  get shared(): boolean {
    return this.#shared.attached;
  }

  get size(): number {
    return this.#records.size;
  }

  /** records with changes not yet in the shared copy (all changed ones while there is none) */
  get pendingWrites(): number {
    return this.#shared.pendingWrites;
  }

  get instance(): string {
    return this.#opts.instance;
  }

  /** this process as node claims name it */
  get process(): string {
    return this.#process;
  }

  get(identity: string): NodeRecord | undefined {
    return this.#records.get(identity);
  }

  /** A recorded identity equal to `identity` but for case (not `identity` itself), if any. */
  caseTwin(identity: string): string | undefined {
    const known = this.#byCase.get(identity.toLowerCase());
    return known === undefined || known === identity ? undefined : known;
  }

  records(): IterableIterator<NodeRecord> {
    return this.#records.values();
  }

  quarantinedCount(): number {
    return this.#quarantined;
  }

  /**
   * Why `identity` may not be attempted now, if it may not. `source`: how it was found; a startup
   * event proves the node started again, so a restart window does not hold it.
   */
  deferral(identity: string, now: number, source?: 'discovery' | 'event' | 'operator'): Deferral | undefined {
    const r = this.#records.get(identity);
    if (r === undefined) return undefined;
    if (r.quarantinedAt !== undefined) return 'quarantined';
    // a node sent back to provisioning for its renewal is provisioned at once, whatever came before
    if (isRenewing(r)) return undefined;
    if (r.notBefore !== undefined && r.notBefore > now) return 'backoff';
    if (source !== 'event' && r.restartSentAt !== undefined && now - r.restartSentAt < this.#restartWindowMs)
      return 'restarting';
    return undefined;
  }

  /**
   * Changes the record of `identity` through the shared copy: `change` is applied to the visible
   * record now and, when it is written, to the version stored then (shared-records.ts). Its
   * `updatedAt` is set here. For changes owned by other modules (renewal/record-changes.ts).
   */
  change(
    identity: string,
    change: (before: NodeRecord | undefined) => NodeRecord | undefined,
  ): ChangeHandle<NodeRecord> {
    return this.#shared.change(identity, (before) => {
      const after = change(before);
      return after === undefined ? undefined : { ...after, updatedAt: laterThan(before, after.updatedAt) };
    });
  }

  /** Waits (bounded) for a change to reach the shared copy: see SharedRecords.waitFor. */
  waitFor(identity: string, handle: ChangeHandle<NodeRecord>, waitMs: number): Promise<SendingRecord> {
    return this.#shared.waitFor(identity, handle, waitMs);
  }

  /**
   * A `configure` or `restart` is about to be sent to `identity` by this instance: recorded first,
   * so whoever takes the node next (another instance, the next process) knows it may be configured
   * (and restarts it before anything else) or restarting (and leaves it alone for the restart
   * window). Resolves 'written' once the shared copy has it, 'late' after `waitMs` without, and
   * 'not-waited' at once when there is no shared copy or it is not taking writes promptly
   * (sharedCopyIsPrompt): the claim alone keeps instances apart then.
   */
  sending(
    identity: string,
    what: 'configure' | 'restart',
    at: number,
    waitMs: number,
    opts: SendingOptions = {},
  ): Promise<SendingRecord> {
    const credentials = opts.credentials;
    const instance = this.#opts.instance;
    const configured =
      what !== 'configure'
        ? {}
        : {
            configuredAt: at,
            configuredExpireAt: credentials?.expiresAt,
            configuredNotRenewable:
              credentials?.renewability.renewable === false ? credentials.renewability.reason : undefined,
          };
    const handle = this.change(identity, (before) => ({
      ...(before ?? emptyRecord(identity, at, instance)),
      instance,
      restartSentAt: what === 'restart' ? at : before?.restartSentAt,
      updatedAt: at,
      ...configured,
    }));
    return this.#shared.waitFor(identity, handle, waitMs, opts.evenIfSlow === true);
  }

  /** Records an ended attempt and what it means for the next one; returns the visible record after it. */
  attempted(identity: string, report: AttemptReport): NodeRecord {
    const policy = this.#opts.policy;
    const instance = this.#opts.instance;
    const process = this.#process;
    const meaning = outcomeMeaning(report.outcome);
    const failed = meaning === 'failure';
    const succeeded = meaning === 'success';
    // the back-off's jitter is drawn once, so the change gives the same record whenever it is applied again
    const jitter = policy.random?.() ?? Math.random();
    const drawn: SetbackPolicy = { ...policy, random: () => jitter };
    const handle = this.change(identity, (before) => {
      const failures = failed ? (before?.failures ?? 0) + 1 : succeeded ? 0 : (before?.failures ?? 0);
      const backoff = failed ? backoffAfter(failures, drawn) : 0;
      const quarantined = failed && quarantines(failures, policy);
      return {
        identity,
        firstSeen: before?.firstSeen ?? report.discoveredAt,
        attempts: (before?.attempts ?? 0) + 1,
        failures,
        outcome: report.outcome,
        error: report.outcome === 'provisioned' ? undefined : boundedError(report.message),
        instance,
        attemptAt: report.at,
        durationMs: Math.max(0, Math.round(report.durationMs)),
        provisionedAt: succeeded ? report.at : before?.provisionedAt,
        // a neutral attempt (deferred, gone, cancelled, ...) leaves a running back-off as it was
        notBefore: failed ? (backoff > 0 ? report.at + backoff : undefined) : succeeded ? undefined : before?.notBefore,
        quarantinedAt: quarantined
          ? (before?.quarantinedAt ?? report.at)
          : succeeded
            ? undefined
            : before?.quarantinedAt,
        // an attempt that configured the node and did not see it restart: the next one restarts it first
        configuredAt: report.configured && !succeeded ? (before?.configuredAt ?? report.at) : undefined,
        ...(report.configured && !succeeded ? configuredOf(before) : {}),
        // a restart sent (by this attempt or an earlier one) holds the node for the restart window
        restartSentAt: before?.restartSentAt,
        updatedAt: report.at,
        generation: succeeded ? (before?.generation ?? 0) + 1 : before?.generation,
        // the attempt is over: a claim of this process on the node is given back
        ...(before?.claimedBy === process ? {} : { claimedBy: before?.claimedBy, claimedAt: before?.claimedAt }),
        // a success ends a renewal and tells what the node holds now; anything else leaves both as they were
        ...(succeeded ? issuedTo(report.credentials ?? configuredCredentials(before), before) : renewalOf(before)),
      };
    });
    return handle.after as NodeRecord;
  }

  /**
   * Ends a node's back-off, and its quarantine unless `keepQuarantine`; forgets that it was left
   * configured when `rebooted`. Returns true when it was quarantined and is not any more. Writes
   * only when something changed, so every instance hearing one startup event does not rewrite it.
   */
  release(identity: string, now: number, opts: { keepQuarantine?: boolean; rebooted?: boolean } = {}): boolean {
    const wasQuarantined = this.#records.get(identity)?.quarantinedAt !== undefined;
    const { after } = this.change(identity, (r) => released(r, now, opts));
    return wasQuarantined && after !== undefined && after.quarantinedAt === undefined;
  }

  /** A version from the shared copy: kept when its revision is newer than the one known. Returns true when it was. */
  merge(record: NodeRecord | undefined, revision: number): boolean {
    return this.#shared.stored(record?.identity ?? '', { value: record, revision });
  }

  /** A version of `identity` from the shared copy that could not be read (kept as its revision only). */
  mergeUnreadable(identity: string, revision: number): boolean {
    return this.#shared.stored(identity, { value: undefined, revision });
  }

  /**
   * Forgets records unchanged for the TTL (oldest first, so this stops at the first young one). A
   * record that names credentials still valid is written again instead once it is half the TTL
   * old, so the bucket's age limit does not drop it either: its renewal needs it, however much
   * longer than the TTL the credentials last.
   */
  expire(now: number): number {
    const oldest = now - this.#opts.ttlMs;
    const refreshBefore = now - this.#opts.ttlMs / 2;
    let n = 0;
    for (const r of [...this.#records.values()]) {
      if (r.updatedAt > refreshBefore) break;
      if ((r.credentialsExpireAt ?? 0) > now) {
        // the change moves it to the end: it is young again
        this.change(r.identity, (b) => (b === undefined ? undefined : { ...b, updatedAt: now }));
      } else if (r.updatedAt <= oldest) {
        this.#forget(r.identity);
        n++;
      }
    }
    return n;
  }

  /** Starts writing through to `backing`, beginning with everything changed before it was there. */
  attach(backing: HistoryBacking | undefined): void {
    this.#shared.attach(
      backing === undefined ? undefined : { write: (_id, record, revision) => backing.write(record, revision) },
    );
  }

  /** Writes pending changes (again after failed writes; a successful write starts the next by itself). */
  flush(): void {
    this.#shared.flush();
  }

  /** Resolves once nothing is in flight (or after `timeoutMs`): stop() lets the last writes land. */
  settle(timeoutMs: number): Promise<void> {
    return this.#shared.settle(timeoutMs);
  }

  #put(record: NodeRecord): void {
    this.#drop(record.identity);
    this.#records.set(record.identity, record);
    const lower = record.identity.toLowerCase();
    if (!this.#byCase.has(lower)) this.#byCase.set(lower, record.identity);
    if (record.quarantinedAt !== undefined) this.#quarantined++;
    while (this.#records.size > this.#capacity) this.#forget(this.#evictable());
  }

  /**
   * The record to forget when there are too many: the least recently changed of the oldest
   * EVICTION_SCAN that was never provisioned (a name that answered once, maybe a forged one), else
   * the oldest. So names that answered and went silent make room for each other before a
   * provisioned server's record goes.
   */
  #evictable(): string {
    let scanned = 0;
    for (const r of this.#records.values()) {
      if (r.provisionedAt === undefined && r.quarantinedAt === undefined) return r.identity;
      if (++scanned >= EVICTION_SCAN) break;
    }
    return this.#records.keys().next().value as string;
  }

  /** Takes the visible record out (the shared copy's knowledge of it stays). */
  #drop(identity: string): void {
    const r = this.#records.get(identity);
    if (r === undefined) return;
    if (r.quarantinedAt !== undefined) this.#quarantined--;
    this.#records.delete(identity);
    const lower = identity.toLowerCase();
    if (this.#byCase.get(lower) === identity) this.#byCase.delete(lower);
  }

  #forget(identity: string): void {
    this.#drop(identity);
    this.#shared.forget(identity);
  }
}

/** Whether two records would be stored the same. */
function sameRecord(a: NodeRecord, b: NodeRecord): boolean {
  if (a === b) return true;
  if (a.updatedAt !== b.updatedAt || a.attempts !== b.attempts) return false;
  return Buffer.from(encodeRecord(a)).equals(Buffer.from(encodeRecord(b)));
}

/** A change is later than the version it replaces, even on a clock that stepped back. */
function laterThan(before: NodeRecord | undefined, at: number): number {
  return before !== undefined && before.updatedAt >= at ? before.updatedAt + 1 : at;
}

/** What release() makes of a record; undefined when nothing changes. */
function released(
  r: NodeRecord | undefined,
  now: number,
  opts: { keepQuarantine?: boolean; rebooted?: boolean },
): NodeRecord | undefined {
  if (r === undefined) return undefined;
  const endQuarantine = r.quarantinedAt !== undefined && opts.keepQuarantine !== true;
  const keepsQuarantine = r.quarantinedAt !== undefined && !endQuarantine;
  const next: NodeRecord = {
    ...r,
    failures: keepsQuarantine ? r.failures : 0,
    notBefore: keepsQuarantine ? r.notBefore : undefined,
    quarantinedAt: endQuarantine ? undefined : r.quarantinedAt,
    configuredAt: opts.rebooted === true ? undefined : r.configuredAt,
    restartSentAt: opts.rebooted === true ? undefined : r.restartSentAt,
    updatedAt: now,
  };
  const same =
    next.failures === r.failures &&
    next.notBefore === r.notBefore &&
    next.quarantinedAt === r.quarantinedAt &&
    next.configuredAt === r.configuredAt &&
    next.restartSentAt === r.restartSentAt;
  return same ? undefined : next;
}

type RenewalFields = Pick<
  NodeRecord,
  'credentialsExpireAt' | 'notRenewable' | 'renewalSentAt' | 'renewalSentBy' | 'renewalError'
>;

/** The renewal fields of `before`, unchanged. */
function renewalOf(before: NodeRecord | undefined): RenewalFields {
  return {
    credentialsExpireAt: before?.credentialsExpireAt,
    notRenewable: before?.notRenewable,
    renewalSentAt: before?.renewalSentAt,
    renewalSentBy: before?.renewalSentBy,
    renewalError: before?.renewalError,
  };
}

/** The credentials of a configure recorded and not restarted yet, kept for the attempt that restarts it. */
function configuredOf(
  before: NodeRecord | undefined,
): Pick<NodeRecord, 'configuredExpireAt' | 'configuredNotRenewable'> {
  return { configuredExpireAt: before?.configuredExpireAt, configuredNotRenewable: before?.configuredNotRenewable };
}

/** What a configure recorded earlier gave the node: so did the success that restarts it (and sent no configure). */
function configuredCredentials(before: NodeRecord | undefined): IssuedCredentials | undefined {
  if (before?.configuredAt === undefined || before.configuredExpireAt === undefined) return undefined;
  const reason = before.configuredNotRenewable;
  return {
    expiresAt: before.configuredExpireAt,
    renewability: reason === undefined ? { renewable: true } : { renewable: false, reason },
  };
}

/**
 * After a success: what the node was given now, or (a success that sent no configure, such as a
 * restart of an earlier attempt's configuration) what it was given before. Any renewal is over.
 */
function issuedTo(credentials: IssuedCredentials | undefined, before: NodeRecord | undefined): RenewalFields {
  if (credentials === undefined)
    return { credentialsExpireAt: before?.credentialsExpireAt, notRenewable: before?.notRenewable };
  const r = credentials.renewability;
  return { credentialsExpireAt: credentials.expiresAt, notRenewable: r.renewable ? undefined : r.reason };
}

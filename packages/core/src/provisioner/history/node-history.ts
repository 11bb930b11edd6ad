// The site's per-node history as this instance knows it: one record a node, in memory, bounded in
// count and age, written through to a shared copy (a key-value bucket, see bucket.ts) when there is
// one. The shared copy's changes come back through merge(): the newer record (updatedAt) wins, so
// an instance's own writes echoing back, or arriving out of order, change nothing.
//
// The back-off and quarantine state lives in the records too, so every instance of a site (and the
// next process after a restart) holds a failing node back the same way.
import type { IssuedCredentials } from '../../host/credentials.js';
import { outcomeMeaning, type Outcome } from '../../host/types.js';
import { backoffAfter, quarantines, type SetbackPolicy } from './backoff-policy.js';
import { boundedError, type NodeRecord } from './record.js';
import { isRenewing } from '../renewal/plan.js';
import { ProvisionerError } from '../../util/errors.js';

/** Where records are written so other instances and later processes see them. */
export interface HistoryBacking {
  /** rejects with HistoryWriteRefusedError when this record can never be written */
  write(record: NodeRecord): Promise<void>;
}

/** The backing refused a record for what it is (its key or its size): writing it again meets the same refusal. */
export class HistoryWriteRefusedError extends ProvisionerError {}

export interface NodeHistoryOptions {
  readonly policy: SetbackPolicy;
  /** the Choria identity recorded as the instance of this process's attempts */
  readonly instance: string;
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

/**
 * sending() waits for the shared copy only while it takes writes promptly: a write acknowledged
 * later than this, one that failed, or a wait that ran out makes the next sends go without
 * waiting for UNSTEADY_HOLD_MS. A broker that just came back often has JetStream answer one write
 * and time out the next for a few seconds; waiting then costs every node seconds and protects
 * nothing the claim does not (the record is still written as soon as it can be).
 */
export const PROMPT_WRITE_MS = 1_000;
export const UNSTEADY_HOLD_MS = 10_000;

/** How sending() ended: the shared copy took the record, the wait ran out, it did not wait, or the write failed. */
export type SendingRecord = 'written' | 'late' | 'not-waited' | 'write-failed';

export class NodeHistory {
  /** in order of last change, oldest first (capacity and age evict from the front) */
  readonly #records = new Map<string, NodeRecord>();
  readonly #opts: NodeHistoryOptions;
  readonly #capacity: number;
  readonly #maxInFlight: number;
  #backing: HistoryBacking | undefined;
  /** records changed since their last successful write */
  readonly #pending = new Set<string>();
  readonly #writing = new Set<string>();
  #failing = false;
  /** monotonic time of the last write that failed, was slow or outlasted a sending() wait */
  #unsteadyAt: number | undefined;
  readonly #monotonic: () => number;
  #quarantined = 0;
  readonly #restartWindowMs: number;
  /** sending() calls waiting for their record to reach the shared copy */
  readonly #waiters = new Map<string, { updatedAt: number; resolve: (r: SendingRecord) => void }[]>();

  constructor(opts: NodeHistoryOptions) {
    this.#opts = opts;
    this.#capacity = opts.capacity ?? DEFAULT_HISTORY_CAPACITY;
    this.#maxInFlight = opts.maxWritesInFlight ?? 256;
    this.#restartWindowMs = opts.restartWindowMs ?? RESTART_WINDOW_MS;
    this.#monotonic = opts.monotonic ?? (() => performance.now());
  }

  /**
   * Whether a send should wait for its record to reach the shared copy: there is one, its writes
   * succeed, and none was slow or failed in the last UNSTEADY_HOLD_MS.
   */
  sharedCopyIsPrompt(): boolean {
    if (this.#backing === undefined || this.#failing) return false;
    return this.#unsteadyAt === undefined || this.#monotonic() - this.#unsteadyAt >= UNSTEADY_HOLD_MS;
  }

  #unsteady(): void {
    this.#unsteadyAt = this.#monotonic();
  }

  get size(): number {
    return this.#records.size;
  }

  /** records not yet in the shared copy (all changes while there is none) */
  get pendingWrites(): number {
    return this.#pending.size + this.#writing.size;
  }

  get(identity: string): NodeRecord | undefined {
    return this.#records.get(identity);
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
   * A `configure` or `restart` is about to be sent to `identity` by this instance: recorded first,
   * so whoever takes the node next (another instance, the next process) knows it may be configured
   * (and restarts it before anything else) or restarting (and leaves it alone for the restart
   * window). Resolves 'written' once the shared copy has it, 'late' after `waitMs` without, and
   * 'not-waited' at once when there is no shared copy or it is not taking writes promptly
   * (sharedCopyIsPrompt): the claim alone keeps instances apart then.
   */
  sending(identity: string, what: 'configure' | 'restart', at: number, waitMs: number): Promise<SendingRecord> {
    const before = this.#records.get(identity);
    const record: NodeRecord = {
      identity,
      firstSeen: before?.firstSeen ?? at,
      attempts: before?.attempts ?? 0,
      failures: before?.failures ?? 0,
      outcome: before?.outcome,
      error: before?.error,
      instance: this.#opts.instance,
      attemptAt: before?.attemptAt ?? at,
      durationMs: before?.durationMs ?? 0,
      provisionedAt: before?.provisionedAt,
      notBefore: before?.notBefore,
      quarantinedAt: before?.quarantinedAt,
      configuredAt: what === 'configure' ? at : before?.configuredAt,
      restartSentAt: what === 'restart' ? at : before?.restartSentAt,
      updatedAt: this.#laterThan(before, at),
      ...renewalOf(before),
    };
    return this.#putAndWait(record, waitMs);
  }

  /**
   * A renewal's `reprovision` is about to be sent to `identity` by this instance: recorded first, as
   * `sending` records a configure, so no instance (nor this one after a restart) sends it twice.
   */
  renewalSending(identity: string, at: number, waitMs: number): Promise<SendingRecord> | undefined {
    const before = this.#records.get(identity);
    if (before === undefined) return undefined;
    const record: NodeRecord = {
      ...before,
      renewalSentAt: at,
      renewalSentBy: this.#opts.instance,
      renewalError: undefined,
      updatedAt: this.#laterThan(before, at),
    };
    return this.#putAndWait(record, waitMs);
  }

  /** The renewal of `identity` failed: it is not tried again until an operator resumes the renewals. */
  renewalFailed(identity: string, at: number, error: string): void {
    const before = this.#records.get(identity);
    if (before === undefined) return;
    this.#put({ ...before, renewalError: boundedError(error), updatedAt: this.#laterThan(before, at) });
    this.#write(identity);
  }

  /** Forgets every failed renewal (an operator resumed them): those nodes are due again. */
  renewalFailuresCleared(at: number): number {
    const failed = [...this.#records.values()].filter((r) => r.renewalError !== undefined);
    for (const r of failed) {
      this.#put({
        ...r,
        renewalError: undefined,
        renewalSentAt: undefined,
        renewalSentBy: undefined,
        updatedAt: this.#laterThan(r, at),
      });
      this.#write(r.identity);
    }
    return failed.length;
  }

  /** Puts `record` and writes it; resolves as `sending` describes. */
  #putAndWait(record: NodeRecord, waitMs: number): Promise<SendingRecord> {
    const identity = record.identity;
    this.#put(record);
    if (!this.sharedCopyIsPrompt()) {
      this.#write(identity);
      return Promise.resolve('not-waited');
    }
    let timer: NodeJS.Timeout | undefined;
    const written = new Promise<SendingRecord>((resolve) => {
      const waiter = { updatedAt: record.updatedAt, resolve };
      const list = this.#waiters.get(identity) ?? [];
      list.push(waiter);
      this.#waiters.set(identity, list);
      timer = setTimeout(() => {
        this.#unsteady();
        // a write that hangs must not keep the waiter: it is done with
        const left = (this.#waiters.get(identity) ?? []).filter((w) => w !== waiter);
        if (left.length === 0) this.#waiters.delete(identity);
        else this.#waiters.set(identity, left);
        resolve('late');
      }, waitMs);
    });
    this.#write(identity);
    return written.finally(() => clearTimeout(timer));
  }

  /** Records an ended attempt and what it means for the next one. */
  attempted(identity: string, report: AttemptReport): NodeRecord {
    const before = this.#records.get(identity);
    const policy = this.#opts.policy;
    const meaning = outcomeMeaning(report.outcome);
    const failed = meaning === 'failure';
    const succeeded = meaning === 'success';
    const failures = failed ? (before?.failures ?? 0) + 1 : succeeded ? 0 : (before?.failures ?? 0);
    const backoff = failed ? backoffAfter(failures, policy) : 0;
    const quarantined = failed && quarantines(failures, policy);
    const record: NodeRecord = {
      identity,
      firstSeen: before?.firstSeen ?? report.discoveredAt,
      attempts: (before?.attempts ?? 0) + 1,
      failures,
      outcome: report.outcome,
      error: report.outcome === 'provisioned' ? undefined : boundedError(report.message),
      instance: this.#opts.instance,
      attemptAt: report.at,
      durationMs: Math.max(0, Math.round(report.durationMs)),
      provisionedAt: succeeded ? report.at : before?.provisionedAt,
      // a neutral attempt (deferred, gone, cancelled, ...) leaves a running back-off as it was
      notBefore: failed ? (backoff > 0 ? report.at + backoff : undefined) : succeeded ? undefined : before?.notBefore,
      quarantinedAt: quarantined ? (before?.quarantinedAt ?? report.at) : succeeded ? undefined : before?.quarantinedAt,
      // an attempt that configured the node and did not see it restart: the next one restarts it first
      configuredAt: report.configured && !succeeded ? (before?.configuredAt ?? report.at) : undefined,
      // a restart sent (by this attempt or an earlier one) holds the node for the restart window
      restartSentAt: before?.restartSentAt,
      updatedAt: this.#laterThan(before, report.at),
      // a success ends a renewal and tells what the node holds now; anything else leaves both as they were
      ...(succeeded ? issuedTo(report.credentials, before) : renewalOf(before)),
    };
    this.#put(record);
    this.#write(identity);
    return record;
  }

  /**
   * Ends a node's back-off, and its quarantine unless `keepQuarantine`; forgets that it was left
   * configured when `rebooted`. Returns true when it was quarantined and is not any more. Writes
   * only when something changed, so every instance hearing one startup event does not rewrite it.
   */
  release(identity: string, now: number, opts: { keepQuarantine?: boolean; rebooted?: boolean } = {}): boolean {
    const r = this.#records.get(identity);
    if (r === undefined) return false;
    const endQuarantine = r.quarantinedAt !== undefined && opts.keepQuarantine !== true;
    const keepsQuarantine = r.quarantinedAt !== undefined && !endQuarantine;
    const next: NodeRecord = {
      ...r,
      failures: keepsQuarantine ? r.failures : 0,
      notBefore: keepsQuarantine ? r.notBefore : undefined,
      quarantinedAt: endQuarantine ? undefined : r.quarantinedAt,
      configuredAt: opts.rebooted === true ? undefined : r.configuredAt,
      restartSentAt: opts.rebooted === true ? undefined : r.restartSentAt,
    };
    if (
      next.failures === r.failures &&
      next.notBefore === r.notBefore &&
      next.quarantinedAt === r.quarantinedAt &&
      next.configuredAt === r.configuredAt &&
      next.restartSentAt === r.restartSentAt
    )
      return false;
    this.#put({ ...next, updatedAt: this.#laterThan(r, now) });
    this.#write(identity);
    return endQuarantine;
  }

  /** A version from the shared copy: kept when it is newer than ours. Returns true when it was. */
  merge(record: NodeRecord): boolean {
    const mine = this.#records.get(record.identity);
    if (mine !== undefined && mine.updatedAt >= record.updatedAt) return false;
    this.#put(record);
    return true;
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
    for (const r of this.#records.values()) {
      if (r.updatedAt > refreshBefore) break;
      if ((r.credentialsExpireAt ?? 0) > now) {
        // put() moves it to the end: the loop meets it again as a young record and stops there
        this.#put({ ...r, updatedAt: this.#laterThan(r, now) });
        this.#write(r.identity);
      } else if (r.updatedAt <= oldest) {
        this.#forget(r.identity);
        n++;
      }
    }
    return n;
  }

  /** Starts writing through to `backing`, beginning with everything changed before it was there. */
  attach(backing: HistoryBacking | undefined): void {
    this.#backing = backing;
    if (backing !== undefined) this.flush();
  }

  /** Writes pending records (again after failed writes; a successful write starts the next by itself). */
  flush(): void {
    if (this.#backing === undefined) return;
    for (const identity of this.#pending) {
      if (this.#writing.size >= this.#maxInFlight) return;
      if (!this.#writing.has(identity)) this.#write(identity);
    }
  }

  /** Resolves once nothing is in flight (or after `timeoutMs`): stop() lets the last writes land. */
  async settle(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.#writing.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  /** A change is later than the version it replaces, even on a clock that stepped back. */
  #laterThan(before: NodeRecord | undefined, now: number): number {
    return before !== undefined && before.updatedAt >= now ? before.updatedAt + 1 : now;
  }

  #put(record: NodeRecord): void {
    const before = this.#records.get(record.identity);
    if (before !== undefined) {
      if (before.quarantinedAt !== undefined) this.#quarantined--;
      this.#records.delete(record.identity);
    }
    this.#records.set(record.identity, record);
    if (record.quarantinedAt !== undefined) this.#quarantined++;
    while (this.#records.size > this.#capacity) this.#forget(this.#records.keys().next().value as string);
  }

  #forget(identity: string): void {
    const r = this.#records.get(identity);
    if (r === undefined) return;
    if (r.quarantinedAt !== undefined) this.#quarantined--;
    this.#records.delete(identity);
    this.#pending.delete(identity);
    this.#wake(identity, Infinity, 'not-waited');
  }

  /** Resolves the sending() calls of `identity` whose change is in the version up to `updatedAt`. */
  #wake(identity: string, updatedAt: number, result: SendingRecord = 'written'): void {
    const list = this.#waiters.get(identity);
    if (list === undefined) return;
    const left = list.filter((w) => {
      if (w.updatedAt > updatedAt) return true;
      w.resolve(result);
      return false;
    });
    if (left.length === 0) this.#waiters.delete(identity);
    else this.#waiters.set(identity, left);
  }

  /** One write per record at a time: a change during a write is written after it. */
  #write(identity: string): void {
    this.#pending.add(identity);
    const backing = this.#backing;
    if (backing === undefined || this.#writing.has(identity) || this.#writing.size >= this.#maxInFlight) return;
    const record = this.#records.get(identity);
    if (record === undefined) {
      this.#pending.delete(identity);
      return;
    }
    this.#pending.delete(identity);
    this.#writing.add(identity);
    const started = this.#monotonic();
    backing.write(record).then(
      () => {
        this.#writing.delete(identity);
        if (this.#monotonic() - started > PROMPT_WRITE_MS) this.#unsteady();
        this.#wake(identity, record.updatedAt);
        if (this.#failing) {
          this.#failing = false;
          this.#opts.onWritten?.();
        }
        // the next waiting change: of this node, or of the first one waiting
        if (this.#pending.has(identity)) this.#write(identity);
        else this.flush();
      },
      (err: unknown) => {
        this.#writing.delete(identity);
        if (err instanceof HistoryWriteRefusedError) {
          // the same record meets the same refusal: kept in memory, not written again
          this.#wake(identity, Infinity, 'write-failed');
          this.#opts.onWriteRefused?.(err);
          // its slot is free: the next waiting change goes, as after a write that succeeded
          this.flush();
          return;
        }
        this.#unsteady();
        // a failed write does not hold the node's attempt
        this.#wake(identity, Infinity, 'write-failed');
        if (this.#records.has(identity)) this.#pending.add(identity);
        if (!this.#failing) {
          this.#failing = true;
          this.#opts.onWriteError?.(err);
        }
      },
    );
  }
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

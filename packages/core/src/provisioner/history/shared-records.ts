// The one place where records shared between the instances of a site are changed: the node
// history's records and the site's renewal round. Every change is a function of the version it is
// applied to, and every write is conditional on the revision of the version it was computed from
// (a JetStream KV `create` for a new key, `update` with the expected revision otherwise). When the
// shared copy holds another revision the write is refused, the stored version is read, and the
// changes not yet written are applied to it again. So a write that was held up (a paused process,
// a broker outage, a slow instance) can never put an older record back over a newer one: it meets
// a revision it did not read, and its change is re-decided on what is stored now. A change that
// no longer holds on the newer version (a condition such as "the renewal I judged is still in
// flight") returns undefined there and is refused, not written.
//
// Versions from the shared copy (its watch, or the answer to a conflict) replace the stored one
// only when their revision is higher; which version wins is decided by the broker's revision,
// never by a clock.
import { ProvisionerError } from '../../util/errors.js';

/** A version of one key in the shared copy: its value (undefined: none, or not readable) and revision (0: no key). */
export interface StoredVersion<T> {
  readonly value: T | undefined;
  readonly revision: number;
}

/** A conditional write found its key at another revision: `stored` is what is there now. */
export class RevisionConflictError<T> extends ProvisionerError {
  readonly stored: StoredVersion<T>;
  constructor(message: string, stored: StoredVersion<T>) {
    super(message);
    this.stored = stored;
  }
}

/** The backing refused a value for what it is (its key or its size): writing it again meets the same refusal. */
export class HistoryWriteRefusedError extends ProvisionerError {}

/** Where shared records are written with compare-and-set. */
export interface SharedBacking<T> {
  /**
   * Writes `value` under `id` if the key is still at `revision` (0: there is no key); resolves the
   * new revision. Rejects with RevisionConflictError (another revision is stored),
   * HistoryWriteRefusedError (never writable), or any other error (try again later).
   */
  write(id: string, value: T, revision: number): Promise<number>;
}

/**
 * One change: the record it makes of `before` (the latest version known when it is applied), or
 * undefined when it changes nothing there.
 */
export type RecordChange<T> = (before: T | undefined) => T | undefined;

/**
 * How a change ended: in the shared copy, applied locally with no shared copy attached (the only
 * copy there is), refused (it changed nothing on the version it was applied to), or dropped (the
 * record was forgotten, or the backing refuses it for good).
 */
export type ChangeEnd = 'written' | 'local' | 'refused' | 'dropped';

/** How a bounded wait for one change ended (see SharedRecords.waitFor). */
export type SendingRecord = 'written' | 'late' | 'not-waited' | 'write-failed' | 'refused';

/** What change() did locally, and when the change ends in the shared copy. */
export interface ChangeHandle<T> {
  /** the visible record after the change, or undefined when it was refused on the visible one */
  readonly after: T | undefined;
  readonly ended: Promise<ChangeEnd>;
}

export interface SharedRecordsOptions<T> {
  /** whether two values would be stored the same (an earlier write of ours that landed without its answer) */
  readonly same: (a: T, b: T) => boolean;
  /** the visible record of `id` is now `value` (undefined: none) */
  readonly onVisible: (id: string, value: T | undefined) => void;
  readonly maxWritesInFlight?: number;
  readonly monotonic?: () => number;
  readonly onWriteError?: (err: unknown) => void;
  readonly onWriteRefused?: (err: unknown) => void;
  readonly onWritten?: () => void;
}

/**
 * A wait for a write is only worth it while the shared copy answers promptly: a write acknowledged
 * later than PROMPT_WRITE_MS, one that failed, or a wait that ran out makes waits skipped for
 * UNSTEADY_HOLD_MS (a broker that just came back often has JetStream answer one write and time out
 * the next for a few seconds).
 */
export const PROMPT_WRITE_MS = 1_000;
export const UNSTEADY_HOLD_MS = 10_000;

/** Changes kept for one record while they cannot be written; beyond it the oldest are folded into one. */
const MAX_CHANGES_PER_RECORD = 32;

interface Pending<T> {
  readonly change: RecordChange<T>;
  readonly end: (how: ChangeEnd) => void;
  /** the last version it was applied to and what it made of it: applied again to the same, the same */
  memo?: { readonly input: T | undefined; readonly output: T | undefined };
}

export class SharedRecords<T> {
  readonly #opts: SharedRecordsOptions<T>;
  readonly #maxInFlight: number;
  readonly #monotonic: () => number;
  #backing: SharedBacking<T> | undefined;
  /** the last version of each record known from the shared copy */
  readonly #stored = new Map<string, StoredVersion<T>>();
  /** changes made here and not yet in the shared copy, oldest first */
  readonly #changes = new Map<string, Pending<T>[]>();
  /** records with changes waiting for a write slot */
  readonly #queued = new Set<string>();
  readonly #writing = new Set<string>();
  /** versions that arrived from the shared copy while a write of their record was under way */
  readonly #arrived = new Map<string, StoredVersion<T>>();
  /** waits to be told that a write of the record failed */
  readonly #failWaiters = new Map<string, Set<() => void>>();
  #failing = false;
  #unsteadyAt: number | undefined;

  constructor(opts: SharedRecordsOptions<T>) {
    this.#opts = opts;
    this.#maxInFlight = opts.maxWritesInFlight ?? 256;
    this.#monotonic = opts.monotonic ?? (() => performance.now());
  }

  get attached(): boolean {
    return this.#backing !== undefined;
  }

  /** records with changes not yet in the shared copy */
  get pendingWrites(): number {
    return this.#changes.size;
  }

  /** There is a shared copy, its writes succeed, and none was slow or failed in the last UNSTEADY_HOLD_MS. */
  isPrompt(): boolean {
    if (this.#backing === undefined || this.#failing) return false;
    return this.#unsteadyAt === undefined || this.#monotonic() - this.#unsteadyAt >= UNSTEADY_HOLD_MS;
  }

  /** The visible record: the stored version with the changes not yet written applied. */
  visible(id: string): T | undefined {
    const changes = this.#changes.get(id);
    const base = this.#stored.get(id)?.value;
    return changes === undefined ? base : (applyAll(base, changes).reduce((v, r) => r.value ?? v, base) ?? base);
  }

  /** Applies `change` to the visible record and queues it for the shared copy. */
  change(id: string, change: RecordChange<T>): ChangeHandle<T> {
    const before = this.visible(id);
    const after = change(before);
    if (after === undefined) return { after, ended: Promise.resolve('refused') };
    let end!: (how: ChangeEnd) => void;
    const ended = new Promise<ChangeEnd>((resolve) => (end = resolve));
    const list = this.#changes.get(id) ?? [];
    list.push({ change, end, memo: { input: before, output: after } });
    this.#changes.set(id, list);
    if (list.length > MAX_CHANGES_PER_RECORD) this.#fold(id, list);
    this.#opts.onVisible(id, after);
    if (this.#backing === undefined) end('local');
    this.#write(id);
    return { after, ended };
  }

  /**
   * Resolves how the wait for `handle` ended: 'written' once the shared copy has it, 'refused' when
   * it changed nothing there, 'late' after `waitMs`, 'write-failed' when a write of it failed, and
   * 'not-waited' at once without a shared copy, or (unless `evenIfSlow`) without a prompt one.
   */
  waitFor(id: string, handle: ChangeHandle<T>, waitMs: number, evenIfSlow = false): Promise<SendingRecord> {
    if (this.#backing === undefined || (!evenIfSlow && !this.isPrompt())) return Promise.resolve('not-waited');
    let timer: NodeJS.Timeout | undefined;
    let failed: (() => void) | undefined;
    const waits = [
      handle.ended.then((how): SendingRecord =>
        how === 'written' ? 'written' : how === 'refused' ? 'refused' : 'not-waited',
      ),
      new Promise<SendingRecord>((resolve) => {
        timer = setTimeout(() => {
          this.#unsteadyAt = this.#monotonic();
          resolve('late');
        }, waitMs);
      }),
      new Promise<SendingRecord>((resolve) => {
        failed = () => resolve('write-failed');
        const set = this.#failWaiters.get(id) ?? new Set();
        set.add(failed);
        this.#failWaiters.set(id, set);
      }),
    ];
    return Promise.race(waits).finally(() => {
      clearTimeout(timer);
      const set = this.#failWaiters.get(id);
      if (failed !== undefined) set?.delete(failed);
      if (set?.size === 0) this.#failWaiters.delete(id);
    });
  }

  /**
   * A version from the shared copy (its watch): kept when its revision is newer. When it is what
   * our first changes made (a write of ours whose answer was lost), those are done. Returns true
   * when it was kept.
   */
  stored(id: string, version: StoredVersion<T>): boolean {
    const base = this.#stored.get(id) ?? { value: undefined, revision: 0 };
    if (version.revision <= base.revision) return false;
    // a write of this record is under way: most often this is its own echo, which its answer
    // settles at less cost; whatever is newer than that answer is taken then
    if (this.#writing.has(id)) {
      if (version.revision > (this.#arrived.get(id)?.revision ?? 0)) this.#arrived.set(id, version);
      return true;
    }
    const list = this.#changes.get(id);
    const landed = list === undefined ? -1 : this.#landed(base, list, version);
    if (list !== undefined && landed >= 0) {
      const taken = list.slice(0, landed + 1);
      this.#ended(id, taken, applyAll(base.value, taken), version);
      return true;
    }
    this.#stored.set(id, version);
    this.#opts.onVisible(id, this.visible(id));
    return true;
  }

  /** The index of the last of `changes` whose result on `base` is `version` (-1: none). */
  #landed(base: StoredVersion<T>, changes: readonly Pending<T>[], version: StoredVersion<T>): number {
    const stored = version.value;
    if (stored === undefined || version.revision <= base.revision) return -1;
    return applyAll(base.value, changes).findLastIndex(
      (r) => r.value !== undefined && this.#opts.same(r.value, stored),
    );
  }

  /** Forgets a record and the changes not yet written (they end 'dropped'). */
  forget(id: string): void {
    this.#stored.delete(id);
    this.#arrived.delete(id);
    this.#queued.delete(id);
    for (const p of this.#changes.get(id) ?? []) p.end('dropped');
    this.#changes.delete(id);
  }

  /** Starts writing through to `backing`, beginning with every change made before it was there. */
  attach(backing: SharedBacking<T> | undefined): void {
    this.#backing = backing;
    if (backing === undefined) return;
    for (const id of this.#changes.keys()) this.#queued.add(id);
    this.flush();
  }

  /** Writes what is queued (again after failed writes; a finished write starts the next by itself). */
  flush(): void {
    if (this.#backing === undefined) return;
    for (const id of this.#queued) {
      if (this.#writing.size >= this.#maxInFlight) return;
      if (!this.#writing.has(id)) this.#write(id);
    }
  }

  /** Resolves once nothing is in flight (or after `timeoutMs`): a stop lets the last writes land. */
  async settle(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (this.#writing.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }

  /** Folds the oldest changes of a record that cannot be written into one, so a long outage stays bounded. */
  #fold(id: string, list: Pending<T>[]): void {
    const old = list.splice(0, list.length - MAX_CHANGES_PER_RECORD / 2);
    const changes = old.map((p) => p.change);
    const folded: RecordChange<T> = (before) => {
      let value = before;
      for (const c of changes) value = c(value) ?? value;
      return value === before ? undefined : value;
    };
    list.unshift({ change: folded, end: (how) => old.forEach((p) => p.end(how)) });
  }

  /** One write a record at a time: a change made during a write is written after it, on its result. */
  #write(id: string): void {
    const backing = this.#backing;
    const list = this.#changes.get(id);
    if (list === undefined) return void this.#queued.delete(id);
    if (backing === undefined || this.#writing.has(id) || this.#writing.size >= this.#maxInFlight) {
      this.#queued.add(id);
      return;
    }
    this.#queued.delete(id);
    const base = this.#stored.get(id) ?? { value: undefined, revision: 0 };
    const taken = list.slice();
    const results = applyAll(base.value, taken);
    const next = results.at(-1)?.value ?? base.value;
    if (next === base.value || next === undefined) return this.#ended(id, taken, results, base);
    this.#writing.add(id);
    const started = this.#monotonic();
    backing.write(id, next, base.revision).then(
      (revision) => {
        this.#writing.delete(id);
        this.#takeArrived(id, revision);
        if (this.#monotonic() - started > PROMPT_WRITE_MS) this.#unsteadyAt = this.#monotonic();
        if (this.#failing) {
          this.#failing = false;
          this.#opts.onWritten?.();
        }
        this.#ended(id, taken, results, { value: next, revision });
      },
      (err: unknown) => {
        this.#writing.delete(id);
        this.#takeArrived(id, base.revision);
        if (err instanceof RevisionConflictError)
          return this.#conflict(id, taken, base, err.stored as StoredVersion<T>);
        if (err instanceof HistoryWriteRefusedError) {
          // the same value meets the same refusal: it stays visible here (as if stored), never written
          this.#ended(id, taken, results, { value: next, revision: base.revision }, 'dropped');
          this.#opts.onWriteRefused?.(err);
          return;
        }
        this.#unsteadyAt = this.#monotonic();
        for (const wake of this.#failWaiters.get(id) ?? []) wake();
        this.#queued.add(id);
        if (!this.#failing) {
          this.#failing = true;
          this.#opts.onWriteError?.(err);
        }
      },
    );
  }

  /** A version that arrived during the write, newer than `revision` (the write's own): taken as any arrival is. */
  #takeArrived(id: string, revision: number): void {
    const arrived = this.#arrived.get(id);
    this.#arrived.delete(id);
    if (arrived !== undefined && arrived.revision > revision) this.stored(id, arrived);
  }

  /**
   * Another revision is stored. When it is what the first k of our changes made of our base (a
   * write of ours that landed although its answer was lost), those k are done; the rest are
   * applied to it again, as they are to any other version.
   */
  #conflict(id: string, taken: Pending<T>[], base: StoredVersion<T>, stored: StoredVersion<T>): void {
    const landed = this.#landed(base, taken, stored);
    if (landed >= 0) {
      const done = taken.slice(0, landed + 1);
      this.#ended(id, done, applyAll(base.value, done), stored);
      return;
    }
    if (stored.revision > (this.#stored.get(id)?.revision ?? 0)) this.#stored.set(id, stored);
    this.#opts.onVisible(id, this.visible(id));
    this.#write(id);
  }

  /** `taken` left the queue on `version`: each ends as it did there, and the next changes go. */
  #ended(
    id: string,
    taken: Pending<T>[],
    results: readonly { readonly value: T | undefined }[],
    version: StoredVersion<T>,
    how?: ChangeEnd,
  ): void {
    if (version.revision >= (this.#stored.get(id)?.revision ?? 0)) this.#stored.set(id, version);
    const list = this.#changes.get(id) ?? [];
    const left = list.filter((p) => !taken.includes(p));
    if (left.length === 0) this.#changes.delete(id);
    else this.#changes.set(id, left);
    taken.forEach((p, i) => p.end(how ?? (results[i]?.value === undefined ? 'refused' : 'written')));
    this.#opts.onVisible(id, this.visible(id));
    if (left.length > 0) this.#write(id);
    else this.flush();
  }
}

/**
 * Each change applied in turn to `base`: what each made (undefined where it changed nothing). A
 * change applied again to the very version it was last applied to is not run again.
 */
function applyAll<T>(base: T | undefined, changes: readonly Pending<T>[]): { value: T | undefined }[] {
  let value = base;
  return changes.map((p) => {
    const next = p.memo !== undefined && p.memo.input === value ? p.memo.output : p.change(value);
    p.memo = { input: value, output: next };
    if (next !== undefined) value = next;
    return { value: next };
  });
}

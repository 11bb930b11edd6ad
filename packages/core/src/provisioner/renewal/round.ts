// The site's renewal round, shared by every instance of the site: which node is the round's
// canary and whether it came back, which nodes hold a renewal slot, how many renewals failed in a
// row and whether the renewals are stopped. It lives in one key of the history bucket and is
// changed only through shared-records.ts (compare-and-set on the revision it was read at), so two
// instances can never both start a canary or take the last slot: the second write meets a revision
// it did not read, and its change is decided again on what the first one wrote.
//
// A slot is taken before `reprovision` is recorded or sent, and given back by whoever sees, in the
// node's history, that the node was provisioned again (and has had time to restart), that its
// renewal failed, or that no `reprovision` was ever recorded for it (its taker died before).
import { ProvisionerError } from '../../util/errors.js';
import { RevisionConflictError, SharedRecords, type ChangeEnd } from '../history/shared-records.js';

export const ROUND_FORMAT = 'choria-provisioner:renewal-round:1';

/** A node's renewal slot: the node, the generation it renews, when and by which instance it was taken. */
export interface RenewalSlot {
  readonly identity: string;
  readonly generation: number;
  readonly takenAt: number;
  readonly takenBy: string;
}

export interface RenewalRound {
  /** the round's canary and the generation it renews; undefined between rounds */
  readonly canary: { readonly identity: string; readonly generation: number } | undefined;
  /** the canary was provisioned again: the round goes on with up to `concurrency` at once */
  readonly canaryBack: boolean;
  readonly slots: readonly RenewalSlot[];
  readonly failuresInRow: number;
  /** why the renewals stopped (never a node's name); undefined while they run */
  readonly stopped: string | undefined;
}

export const NO_ROUND: RenewalRound = {
  canary: undefined,
  canaryBack: false,
  slots: [],
  failuresInRow: 0,
  stopped: undefined,
};

export class RoundRecordError extends ProvisionerError {}

export function encodeRound(r: RenewalRound): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ format: ROUND_FORMAT, ...r }));
}

const MAX_SLOTS = 10_000;
const MAX_TEXT = 1_000;

/** Parses a stored round; throws RoundRecordError naming the first problem. */
export function decodeRound(bytes: Uint8Array): RenewalRound {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
  } catch (err) {
    throw new RoundRecordError(`not JSON: ${(err as Error).message}`);
  }
  if (typeof o !== 'object' || o === null || o['format'] !== ROUND_FORMAT)
    throw new RoundRecordError(`not a ${ROUND_FORMAT} record`);
  const whole = (v: unknown, what: string): number => {
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw new RoundRecordError(`${what} must be a whole number of at least 0`);
    return v;
  };
  const text = (v: unknown, what: string): string => {
    if (typeof v !== 'string' || v === '' || v.length > MAX_TEXT)
      throw new RoundRecordError(`${what} must be a short text`);
    return v;
  };
  const canary = o['canary'] as Record<string, unknown> | undefined;
  const slots = o['slots'];
  if (!Array.isArray(slots) || slots.length > MAX_SLOTS) throw new RoundRecordError('slots must be a list');
  return {
    canary:
      canary === undefined
        ? undefined
        : {
            identity: text(canary['identity'], 'canary.identity'),
            generation: whole(canary['generation'], 'canary.generation'),
          },
    canaryBack: o['canaryBack'] === true,
    slots: slots.map((s: Record<string, unknown>) => ({
      identity: text(s['identity'], 'slot identity'),
      generation: whole(s['generation'], 'slot generation'),
      takenAt: whole(s['takenAt'], 'slot takenAt'),
      takenBy: text(s['takenBy'], 'slot takenBy'),
    })),
    failuresInRow: whole(o['failuresInRow'] ?? 0, 'failuresInRow'),
    stopped: o['stopped'] === undefined ? undefined : text(o['stopped'], 'stopped'),
  };
}

/**
 * Where the round is kept: one key of the history bucket (HistoryBucket.siteRecord). `write` is
 * conditional on `revision` and rejects with RevisionConflictError carrying the stored bytes.
 */
export interface RoundBacking {
  write(value: Uint8Array, revision: number): Promise<number>;
  read(): Promise<{ readonly value: Uint8Array | undefined; readonly revision: number }>;
}

const ROUND_ID = 'round';

/**
 * The round as this instance knows it, changed through compare-and-set. Without a shared copy (the
 * history in memory) the round is this instance's alone.
 */
export class RoundStore {
  readonly #records: SharedRecords<RenewalRound>;
  #backing: RoundBacking | undefined;
  #refreshing = false;

  constructor() {
    this.#records = new SharedRecords<RenewalRound>({
      same: (a, b) => Buffer.from(encodeRound(a)).equals(Buffer.from(encodeRound(b))),
      onVisible: () => undefined,
    });
  }

  get attached(): boolean {
    return this.#backing !== undefined;
  }

  get round(): RenewalRound {
    return this.#records.visible(ROUND_ID) ?? NO_ROUND;
  }

  /** Shares the round through `backing` from now on (the history bucket was reached). */
  attach(backing: RoundBacking): void {
    if (this.#backing !== undefined) return;
    this.#backing = backing;
    this.#records.attach({
      write: async (_id, value, revision) => {
        try {
          return await backing.write(encodeRound(value), revision);
        } catch (err) {
          if (!(err instanceof RevisionConflictError)) throw err;
          const stored = err.stored as { value: Uint8Array | undefined; revision: number };
          throw new RevisionConflictError(err.message, {
            value: decodeOrNone(stored.value),
            revision: stored.revision,
          });
        }
      },
    });
  }

  /** Reads the stored round (bounded by the backing's own timeouts); a read that fails changes nothing. */
  async refresh(): Promise<void> {
    if (this.#backing === undefined || this.#refreshing) return;
    this.#refreshing = true;
    // changes whose write failed are written again first (nothing else retries them)
    this.#records.flush();
    try {
      const stored = await this.#backing.read();
      this.#records.stored(ROUND_ID, { value: decodeOrNone(stored.value), revision: stored.revision });
    } catch {
      // the next tick reads again
    } finally {
      this.#refreshing = false;
    }
  }

  /** Changes the round; resolves how the change ended (see SharedRecords). */
  change(change: (r: RenewalRound) => RenewalRound | undefined): { applied: boolean; ended: Promise<ChangeEnd> } {
    const handle = this.#records.change(ROUND_ID, (before) => change(before ?? NO_ROUND));
    return { applied: handle.after !== undefined, ended: handle.ended };
  }
}

function decodeOrNone(value: Uint8Array | undefined): RenewalRound | undefined {
  if (value === undefined) return undefined;
  try {
    return decodeRound(value);
  } catch {
    return undefined;
  }
}

const sameSlot = (a: RenewalSlot, b: RenewalSlot): boolean =>
  a.identity === b.identity && a.takenAt === b.takenAt && a.takenBy === b.takenBy;

/**
 * The round's changes, each decided on the version it is written over: a slot is taken only while
 * the renewals run, the node holds none, and there is room (the canary: no round under way and no
 * slot held; any other: the canary back and fewer than `limit` held).
 */
export const roundChanges = {
  take(slot: RenewalSlot, asCanary: boolean, limit: number) {
    return (r: RenewalRound): RenewalRound | undefined => {
      if (r.stopped !== undefined || r.slots.some((s) => s.identity === slot.identity)) return undefined;
      if (asCanary)
        return r.canary !== undefined || r.slots.length > 0
          ? undefined
          : {
              ...r,
              canary: { identity: slot.identity, generation: slot.generation },
              canaryBack: false,
              slots: [slot],
            };
      if (r.canary === undefined || !r.canaryBack || r.slots.length >= limit) return undefined;
      return { ...r, slots: [...r.slots, slot] };
    };
  },

  /** Gives slots back; a canary whose slot goes back before it was sent `reprovision` is no canary. */
  giveBack(slots: readonly RenewalSlot[], unsentCanary = false) {
    return (r: RenewalRound): RenewalRound | undefined => {
      const left = r.slots.filter((s) => !slots.some((g) => sameSlot(s, g)));
      if (left.length === r.slots.length) return undefined;
      const canaryGone = unsentCanary && !r.canaryBack && slots.some((g) => g.identity === r.canary?.identity);
      return { ...r, slots: left, ...(canaryGone ? { canary: undefined } : {}) };
    };
  },

  /** The slot of `identity` goes back (its `reprovision` was lost); a canary not back yet is no canary. */
  release(identity: string) {
    return (r: RenewalRound): RenewalRound | undefined => {
      const slot = r.slots.find((s) => s.identity === identity);
      return slot === undefined ? undefined : roundChanges.giveBack([slot], true)(r);
    };
  },

  /** The canary (of this generation) was provisioned again with later credentials. */
  canaryBack(identity: string, generation: number) {
    return (r: RenewalRound): RenewalRound | undefined =>
      r.canary?.identity !== identity || r.canary.generation !== generation || r.canaryBack
        ? undefined
        : { ...r, canaryBack: true };
  },

  /** Nothing is due or held: the next due node starts a new round with its own canary. */
  ended(canary: string) {
    return (r: RenewalRound): RenewalRound | undefined =>
      r.canary?.identity !== canary || r.slots.length > 0 ? undefined : { ...r, canary: undefined, canaryBack: false };
  },

  completed() {
    return (r: RenewalRound): RenewalRound | undefined =>
      r.failuresInRow === 0 ? undefined : { ...r, failuresInRow: 0 };
  },

  /** A renewal failed: counted, a failed canary ends its round, and the renewals stop when they must. */
  failed(identity: string, stopsAt: number, stopReason: (failuresInRow: number) => string | undefined) {
    return (r: RenewalRound): RenewalRound => {
      const failuresInRow = r.failuresInRow + 1;
      const canaryFailed = r.canary?.identity === identity && !r.canaryBack;
      const stop = r.stopped ?? (failuresInRow >= stopsAt ? stopReason(failuresInRow) : undefined);
      return {
        ...r,
        failuresInRow,
        stopped: stop,
        ...(canaryFailed || stop !== undefined ? { canary: undefined, canaryBack: false } : {}),
      };
    };
  },

  resumed() {
    return (r: RenewalRound): RenewalRound => ({
      ...r,
      stopped: undefined,
      failuresInRow: 0,
      canary: undefined,
      canaryBack: false,
    });
  },
};

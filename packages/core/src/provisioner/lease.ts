// Whether this instance may still change nodes: the one owner of that decision (each attempt's
// claim, host/claim.ts, asks it immediately before every request of the attempt). It is read on
// this process's monotonic clock, never from what the event loop happens to deliver first: after
// a pause (SIGSTOP, a stopped VM, a long GC pause) the lease has run out by the clock before any
// timer or message could say so.
//
// - With leader election, the leader's lease ends a bucket TTL after it sent its last refresh that
//   succeeded, less a margin (election.ts leaseEndsAt): no other instance can win the key earlier.
// - With active/active, a member's lease ends when the others would give its share away: three of
//   its heartbeats after it sent the last one it heard back itself, less half a heartbeat
//   (membership.ts leaseEndsAt). Lock-only mode has no lease: the node lock keeps instances apart.
// - An instance working alone always may.
//
// Before a `configure` or `restart` goes out, the node's shared history records it, so whoever takes
// the node next (another instance, the next process) restarts a node that may be configured before
// anything else, and leaves a restarting node alone for its restart window. The send waits for
// that record at most SENDING_RECORD_WAIT_MS, and not at all while the shared copy is not taking
// writes promptly (NodeHistory.sharedCopyIsPrompt decides), as just after a broker restart.
import type { Logger } from 'winston';
import type { ClaimSource, RecordedChange } from '../host/claim.js';
import type { IssuedCredentials } from '../host/credentials.js';
import { formatMs } from '../util/duration.js';
import { errorText } from '../util/values.js';
import { leaseLapsedError } from '../util/cancelled.js';
import type { NodeHistory } from './history/index.js';

/** How long a configure or restart waits for the shared history to take its record before it is sent anyway. */
export const SENDING_RECORD_WAIT_MS = 2_000;
/**
 * Where another process may take the node over (a next leader, an active/active member after a
 * claim), how long a configure or restart waits for its record to be shared, even while the
 * history is slow; without it nothing is sent.
 */
export const SHARED_INTENT_WAIT_MS = 10_000;

/**
 * Records a configure or restart in the node's history and waits until the shared copy has it:
 * whoever takes the node next must know that it may be configured (and restart it rather than
 * configure it again). Throws a cancellation when the record is not shared within
 * SHARED_INTENT_WAIT_MS: nothing is sent then. The one rule for every coordinated mode.
 */
export async function recordSharedIntent(
  history: NodeHistory,
  identity: string,
  what: RecordedChange,
  at: number,
  credentials?: IssuedCredentials,
): Promise<void> {
  const opts = { credentials, evenIfSlow: true };
  const written = await history.sending(identity, what, at, SHARED_INTENT_WAIT_MS, opts);
  if (written !== 'written' && written !== 'not-waited')
    throw leaseLapsedError(what, `its record was not shared within ${formatMs(SHARED_INTENT_WAIT_MS)} (${written})`);
}

/** Something whose right to act ends at a time on performance.now()'s clock. */
export interface LeaseSource {
  leaseEndsAt(): number;
}

export interface SiteLeaseOptions {
  /** the election, when this site elects a leader (undefined until it started) */
  readonly election?: () => LeaseSource | undefined;
  /** the active/active membership, when this site has one (undefined until it joined) */
  readonly membership?: () => LeaseSource | undefined;
  readonly history: NodeHistory;
  readonly logger: Logger;
  /** the monotonic clock; performance.now by default */
  readonly now?: () => number;
  /** the wall clock for history records; Date.now by default */
  readonly wallClock?: () => number;
}

export class SiteLease implements ClaimSource {
  readonly #opts: SiteLeaseOptions;
  readonly #now: () => number;
  readonly #wallClock: () => number;

  constructor(opts: SiteLeaseOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => performance.now());
    this.#wallClock = opts.wallClock ?? Date.now;
  }

  /** undefined while this instance may change nodes; otherwise why not. */
  refusal(): string | undefined {
    const now = this.#now();
    if (this.#opts.election !== undefined) {
      const end = this.#opts.election()?.leaseEndsAt() ?? 0;
      if (end === 0) return 'this instance is not the leader (leadership was lost or never won)';
      if (now >= end)
        return (
          `this instance's leadership lease ran out ${formatMs(now - end)} ago by its own clock ` +
          `(it was paused or could not refresh the election key)`
        );
    }
    if (this.#opts.membership !== undefined) {
      const end = this.#opts.membership()?.leaseEndsAt() ?? 0;
      if (end === 0) return 'this active/active member has not heard its own heartbeat yet';
      if (now >= end)
        return (
          `this active/active member's lease ran out ${formatMs(now - end)} ago by its own clock ` +
          `(the others take its share over; it was paused or cut off)`
        );
    }
    return undefined;
  }

  /**
   * Records the configure or restart in the node's history before it is sent. Under leader election
   * with a shared history the next leader must know of it (recordSharedIntent); otherwise the wait
   * is bounded and the request goes without the record when the history is slow.
   */
  async recordIntent(identity: string, what: RecordedChange, credentials?: IssuedCredentials): Promise<void> {
    if (this.#opts.election !== undefined && this.#opts.history.shared)
      return recordSharedIntent(this.#opts.history, identity, what, this.#wallClock(), credentials);
    try {
      const at = this.#wallClock();
      const done = await this.#opts.history.sending(identity, what, at, SENDING_RECORD_WAIT_MS, { credentials });
      if (done === 'late')
        this.#opts.logger.warn(
          `The node history did not take the ${what} record of ${identity} within ` +
            `${formatMs(SENDING_RECORD_WAIT_MS)}: sending ${what} without it (and the next ones, ` +
            `until the history takes writes promptly again)`,
        );
    } catch (err) {
      this.#opts.logger.warn(
        `Could not record the ${what} of ${identity} in the node history, sending it without: ${errorText(err)}`,
      );
    }
  }
}

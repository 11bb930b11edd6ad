// The claim of one attempt: its right to act on one node, taken from the site's lease when the
// attempt starts and handed to every step. A provisioner acts on a node only while its right to
// act holds (a leader's lease on the election key, an active/active member's own heartbeat); a
// process that was paused (a long GC pause, a stopped VM, SIGSTOP) must not send what it decided
// before the pause, because another instance may have taken the node meanwhile. go-choria makes a
// new private key at every `gencsr` and `gen25519`, so a configure sent by the old owner after the
// new owner's `gencsr` leaves a certificate that does not match the server's key, and the server
// can never start again.
//
// So the claim is asked immediately before every request of the attempt and before the helper's
// reply is acted on; it records the intent of a configure or restart in the node's history before
// it goes out; and it owns the grace a stopping provisioner gives a configure and its restart. The
// answer to "may this instance act?" comes from the lease (provisioner/lease.ts), the one place
// that decides, on the monotonic clock.
import { abortError, leaseLapsedError, isCancelled } from '../util/cancelled.js';
import { errorText } from '../util/values.js';
import type { IssuedCredentials } from './credentials.js';

/** A request whose intent the node's history records before it goes out. */
export type RecordedChange = 'configure' | 'restart';

/** What a claim is taken from: the site's lease. */
export interface ClaimSource {
  /** undefined while this instance may change nodes; otherwise why it may not (said in the log) */
  refusal(): string | undefined;
  /**
   * Records, right before `configure` or `restart` goes out, that it is sent: whoever takes the
   * node next knows that it may be configured (and restarts it first) or restarting (and leaves
   * it alone for the restart's duration). Bounded: it never holds the send for long.
   */
  recordIntent(identity: string, what: RecordedChange, credentials?: IssuedCredentials): Promise<void>;
}

/** The unit a stop interrupts only after a grace (Claim.commit). */
export interface CommitUnit {
  /** aborted when the attempt is cancelled for the lease at once, for a stop after the grace */
  readonly signal: AbortSignal;
  /** ends the unit: its listener and timer go */
  release(): void;
}

export class Claim {
  readonly identity: string;
  readonly #source: ClaimSource | undefined;
  /** what the configure of this attempt gives the node that expires (recorded with its intent) */
  #credentials: IssuedCredentials | undefined;

  /** Without a source the claim always holds: an instance working alone. */
  constructor(identity: string, source?: ClaimSource) {
    this.identity = identity;
    this.#source = source;
  }

  /** undefined while this attempt may act on its node; otherwise why not. */
  refusal(): string | undefined {
    return this.#source?.refusal();
  }

  /**
   * Throws a cancellation of reason `lease` when the right to act lapsed; `what` names what was
   * about to happen. The attempt ends as cancelled, not failed, and sends nothing more.
   */
  assertMayAct(what: string): void {
    const refusal = this.refusal();
    if (refusal !== undefined) throw leaseLapsedError(what, refusal);
  }

  /**
   * The configure this attempt is about to send gives the node these credentials: recorded with
   * its intent, so whoever finishes the node (a restart after this attempt ended) knows them.
   */
  configuresWith(credentials: IssuedCredentials | undefined): void {
    this.#credentials = credentials;
  }

  /**
   * The last word before a request goes out: asked, the intent recorded (configure and restart),
   * and asked again, since recording may have taken time. Nothing is awaited between the last
   * question and the send.
   */
  async beforeSend(what: string, record: RecordedChange | undefined, signal: AbortSignal): Promise<void> {
    this.assertMayAct(what);
    if (record === undefined || this.#source === undefined) return;
    await this.#source.recordIntent(this.identity, record, record === 'configure' ? this.#credentials : undefined);
    if (signal.aborted) throw abortError(signal, what);
    this.assertMayAct(what);
  }

  /**
   * A configure and its restart as one unit that a stop interrupts only `graceMs` after it came:
   * once configure may have been applied, leaving before the restart would leave the node
   * configured in provisioning mode. The grace is for a stop only: an attempt cancelled because
   * the right to act lapsed ends at once, since another instance may be working on the node
   * already (and the claim is still asked before each request in the unit).
   */
  commit(job: AbortSignal, graceMs: number, log: (text: string) => void): CommitUnit {
    const unit = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const onCancel = (): void => {
      if (isCancelled(job.reason, 'lease')) return unit.abort(job.reason);
      log(
        `${this.identity}: finishing configure and restart ` +
          `(at most ${graceMs} ms, while this instance may still act) before stopping: ${errorText(job.reason)}`,
      );
      timer = setTimeout(() => unit.abort(job.reason), graceMs);
    };
    job.addEventListener('abort', onCancel, { once: true });
    return {
      signal: unit.signal,
      release: () => {
        job.removeEventListener('abort', onCancel);
        clearTimeout(timer);
      },
    };
  }
}

// The one way an attempt ends without a verdict on the node: it was cancelled, and the reason
// says by what. A cancelled attempt says nothing about the node, so it is never a failure.
import { ProvisionerError } from './errors.js';

/**
 * Why work was cancelled:
 * - `stop`: the provisioner stops (its own abort, or the signal of the attempt);
 * - `pause`: the site is paused, so nothing new starts (upstream's wording in the message);
 * - `lease`: this instance's right to act lapsed (a lease ran out, leadership was lost), so it
 *   sends nothing more, not even what a stopping provisioner may still finish.
 */
export type CancelReason = 'stop' | 'pause' | 'lease';

export class CancelledError extends ProvisionerError {
  constructor(
    readonly reason: CancelReason,
    message: string,
  ) {
    super(message);
  }
}

/** Work refused because the site is paused; `what` names it (upstream wording). */
export function pausedError(what: string): CancelledError {
  return new CancelledError('pause', `provisioning is paused, cannot perform ${what}`);
}

/** A request not sent because the right to act lapsed; `why` is the lease's refusal. */
export function leaseLapsedError(what: string, why: string): CancelledError {
  return new CancelledError('lease', `${what} was not sent: ${why}`);
}

/** Whether `err` is a cancellation, of `reason` when one is given. */
export function isCancelled(err: unknown, reason?: CancelReason): err is CancelledError {
  return err instanceof CancelledError && (reason === undefined || err.reason === reason);
}

/** `what` was cancelled by `signal`: for the signal's reason when that is a cancellation, else a stop. */
export function abortError(signal: AbortSignal, what: string): CancelledError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  return new CancelledError(isCancelled(reason) ? reason.reason : 'stop', `${what} was cancelled: ${why}`);
}

// What a renewal changes in a node's history record, as changes (NodeHistory.change) that are
// decided again on whatever version of the record they are written over. Each holds only while the
// facts it was made for still hold: `reprovision` is recorded only for the generation and
// credentials the renewer saw due, and a failure only for the renewal it judged. A view that lags
// behind the shared copy can therefore neither record a second `reprovision` for credentials
// already renewed nor mark as failed a renewal that another instance has seen completed.
import { boundedError, type NodeRecord } from '../history/record.js';

/** The facts a renewal is decided on: the node's generation and the expiry of what it holds. */
export interface RenewalBasis {
  readonly generation: number;
  readonly expiresAt: number;
}

export const basisOf = (r: NodeRecord): RenewalBasis => ({
  generation: r.generation ?? 0,
  expiresAt: r.credentialsExpireAt ?? 0,
});

const onBasis = (r: NodeRecord, basis: RenewalBasis): boolean =>
  (r.generation ?? 0) === basis.generation && (r.credentialsExpireAt ?? 0) === basis.expiresAt;

/** `reprovision` is about to go to the node: only while it holds the credentials seen due and nothing renews them. */
export function renewalSent(basis: RenewalBasis, at: number, instance: string) {
  return (b: NodeRecord | undefined): NodeRecord | undefined =>
    b === undefined ||
    !onBasis(b, basis) ||
    b.renewalSentAt !== undefined ||
    b.renewalError !== undefined ||
    b.notRenewable !== undefined
      ? undefined
      : { ...b, renewalSentAt: at, renewalSentBy: instance, renewalError: undefined, updatedAt: at };
}

/** The `reprovision` recorded at `sentAt` by `instance` did not go out after all (its record was not shared). */
export function renewalWithdrawn(sentAt: number, instance: string, at: number) {
  return (b: NodeRecord | undefined): NodeRecord | undefined =>
    b?.renewalSentAt !== sentAt || b.renewalSentBy !== instance || b.renewalError !== undefined
      ? undefined
      : { ...b, renewalSentAt: undefined, renewalSentBy: undefined, updatedAt: at };
}

/**
 * The `reprovision` sent at `sentAt` never reached the node (it still answers on the fleet's
 * collective long after go-choria would have restarted): the renewal is due again, while that one
 * is still in flight.
 */
export function renewalLost(sentAt: number, at: number) {
  return (b: NodeRecord | undefined): NodeRecord | undefined =>
    b?.renewalSentAt !== sentAt || b.renewalError !== undefined
      ? undefined
      : { ...b, renewalSentAt: undefined, renewalSentBy: undefined, updatedAt: at };
}

/** The renewal sent at `sentAt` failed: only while that one is still in flight. */
export function renewalFailed(sentAt: number, error: string, at: number) {
  return (b: NodeRecord | undefined): NodeRecord | undefined =>
    b?.renewalSentAt !== sentAt || b.renewalError !== undefined
      ? undefined
      : { ...b, renewalError: boundedError(error), updatedAt: at };
}

/**
 * The node was provisioned again (generation `generation`) without credentials that expire later:
 * its renewal failed, unless something changed the record since.
 */
export function renewalFellShort(generation: number, error: string, at: number) {
  return (b: NodeRecord | undefined): NodeRecord | undefined =>
    b === undefined || (b.generation ?? 0) !== generation || b.renewalError !== undefined
      ? undefined
      : { ...b, renewalError: boundedError(error), updatedAt: at };
}

/** An operator resumed the renewals: a failed one is due again. */
export function renewalCleared(at: number) {
  return (b: NodeRecord | undefined): NodeRecord | undefined =>
    b?.renewalError === undefined
      ? undefined
      : { ...b, renewalError: undefined, renewalSentAt: undefined, renewalSentBy: undefined, updatedAt: at };
}

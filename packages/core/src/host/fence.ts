// Fencing: whether this instance may still work on nodes, asked immediately before every request of
// an attempt (above all those that change the node: gencsr, gen25519, configure, restart, shutdown,
// release_update) and before the helper's reply is acted on. A provisioner acts on a node only while its right to act
// holds (a leader's lease on the election key, an active/active member's own heartbeat); a process that was paused
// (a long GC pause, a stopped VM, SIGSTOP) must not send what it decided before the pause, because
// another instance may have taken the node meanwhile. go-choria makes a new private key at every
// `gencsr` and `gen25519`, so a configure sent by the old owner after the new owner's `gencsr`
// leaves a certificate that does not match the server's key, and the server can never start again.
//
// The host layer only asks; the answer comes from the scheduler's lease (provisioner/lease.ts),
// the one place that decides.
import { leaseLapsedError } from '../util/cancelled.js';

/** What a fenced request is about to do, for the lease's record keeping. */
export type FencedSend = 'configure' | 'restart';

/** Asked by an attempt before it changes a node. */
export interface NodeFence {
  /** undefined while this instance may change nodes; otherwise why it may not (said in the log) */
  refusal(): string | undefined;
  /**
   * Called (and awaited) right before `configure` or `restart` goes out, after refusal() said yes:
   * the shared history records it, so whoever takes the node next knows that it may be configured
   * (and restarts it first) or restarting (and leaves it alone for the restart's duration).
   */
  sending?(identity: string, what: FencedSend): Promise<void>;
}

/**
 * Throws a cancellation of reason `lease` when the fence refuses; `what` names the request. The
 * attempt ends as cancelled, not failed, and sends nothing more: unlike a stop, which may finish
 * configure and restart, a lapsed lease may not.
 */
export function assertMayChange(fence: NodeFence | undefined, what: string): void {
  const refusal = fence?.refusal();
  if (refusal !== undefined) throw leaseLapsedError(what, refusal);
}

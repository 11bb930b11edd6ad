// What one server's provisioning is about, for whoever drives it: the job a scheduler hands to a
// HostRunner, the outcome it learns (never the steps), the RPC steps by name, and the metrics a
// Host reports to (implemented by metrics/ProvisionerMetrics, which sits above this layer).
import type { Logger } from 'winston';

/** The RPC steps of the pipeline, `agent#action`. */
export type RpcName =
  | 'rpcutil#inventory'
  | 'choria_provision#jwt'
  | 'choria_provision#gen25519'
  | 'choria_provision#gencsr'
  | 'choria_provision#configure'
  | 'choria_provision#restart'
  | 'choria_provision#shutdown'
  | 'choria_provision#release_update';

/** Outcome of one provisioning attempt (beyond upstream: product.md §5.9 #4). */
export type Outcome = 'provisioned' | 'deferred' | 'shutdown' | 'upgraded' | 'failed' | 'skipped_locked' | 'stale' | 'gone' | 'dry_run';

export const OUTCOMES: readonly Outcome[] = ['provisioned', 'deferred', 'shutdown', 'upgraded', 'failed', 'skipped_locked', 'stale', 'gone', 'dry_run'];

/** What watching a node after a lost reply found (host/lost-reply.ts). */
export type LostReplyFinding = 'acted' | 'not_acted' | 'gone' | 'unsure';

/** The measurements a Host takes. */
export interface HostMetrics {
  rpcTime(rpc: RpcName, seconds: number): void;
  rpcError(rpc: RpcName): void;
  helperTime(seconds: number): void;
  helperError(): void;
  helperShutdownRequest(): void;
  lostReply(rpc: RpcName, finding: LostReplyFinding): void;
}

export interface HostJob {
  readonly identity: string;
  /** ms since epoch when the node was offered (discovery or event) */
  readonly discoveredAt: number;
  /** aborted when the provisioner stops or loses leadership */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** reports the step being worked on, for the status view */
  onStep(step: string): void;
  /**
   * set when an earlier attempt configured the node but could not restart it (ms since epoch):
   * the attempt starts with the restart instead of configuring the node a second time
   */
  readonly configuredAt?: number;
  /** the go-choria version the node's startup event reported, when it came from one */
  readonly reportedVersion?: string;
}

export interface HostResult {
  readonly outcome: Outcome;
  /** human text: the defer/shutdown message, or the error */
  readonly message?: string;
  readonly error?: Error;
  /** a failed attempt got as far as configuring the node: the next one can resume at the restart */
  readonly configured?: boolean;
}

export type HostRunner = (job: HostJob) => Promise<HostResult>;

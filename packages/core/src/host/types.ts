// What one server's provisioning is about, for whoever drives it: the job a scheduler hands to a
// HostRunner, the outcome it learns (never the steps), the RPC steps by name, and the metrics a
// Host reports to (implemented by metrics/ProvisionerMetrics, which sits above this layer).
import type { IssuedCredentials } from './credentials.js';
import type { Logger } from 'winston';
import type { Claim } from './claim.js';

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

/** Outcome of one provisioning attempt (upstream knows only success and error). */
export type Outcome =
  | 'provisioned'
  | 'deferred'
  | 'shutdown'
  | 'upgraded'
  | 'failed'
  | 'skipped_locked'
  | 'stale'
  | 'gone'
  | 'dry_run'
  | 'cancelled';

/**
 * What an outcome says about the node:
 * - `success`: the provisioner is done with it (configured and restarting, shut down, or updating
 *   and coming back in provisioning mode on its own);
 * - `failure`: the node or the helper did something wrong; this is what counts towards back-off,
 *   quarantine and the failure figures;
 * - `neutral`: neither. The attempt ended without judging the node: the helper asked to wait, the
 *   node was busy elsewhere or vanished, the attempt was a dry run, or it was cancelled because
 *   this instance stopped, paused or lost its leadership (that says nothing about the node).
 */
export type OutcomeMeaning = 'success' | 'failure' | 'neutral';

export interface OutcomeRule {
  readonly meaning: OutcomeMeaning;
  /**
   * counted by `choria_provisioner_provision_errors`: the Go provisioner returns an error for a
   * defer and a stale skip too, and dashboards built on that metric expect the same count
   */
  readonly provisionError: boolean;
  /**
   * the node restarts into its new configuration or shuts down: the scheduler keeps it on its
   * list for a while, so a discovery during the restart does not take it again
   */
  readonly holdsNode: boolean;
}

/** The one place that decides what each outcome means; metrics, throughput, history, status and the demo read it. */
export const OUTCOME_RULES: Readonly<Record<Outcome, OutcomeRule>> = {
  provisioned: { meaning: 'success', provisionError: false, holdsNode: true },
  shutdown: { meaning: 'success', provisionError: false, holdsNode: true },
  upgraded: { meaning: 'success', provisionError: false, holdsNode: false },
  failed: { meaning: 'failure', provisionError: true, holdsNode: false },
  deferred: { meaning: 'neutral', provisionError: true, holdsNode: false },
  stale: { meaning: 'neutral', provisionError: true, holdsNode: false },
  skipped_locked: { meaning: 'neutral', provisionError: false, holdsNode: false },
  gone: { meaning: 'neutral', provisionError: false, holdsNode: false },
  dry_run: { meaning: 'neutral', provisionError: false, holdsNode: false },
  cancelled: { meaning: 'neutral', provisionError: false, holdsNode: false },
};

export const OUTCOMES: readonly Outcome[] = Object.keys(OUTCOME_RULES) as Outcome[];

export function outcomeMeaning(outcome: Outcome): OutcomeMeaning {
  return OUTCOME_RULES[outcome].meaning;
}

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
   * called once the attempt only watches the node: the reply of a node-changing action was lost
   * and the node is observed (seconds of discovery probes, host/lost-reply.ts) before anything
   * more is sent. The scheduler may give the attempt's worker to the next node meanwhile; the
   * attempt still runs to its end and reports its result as usual.
   */
  onWatching?(): void;
  /**
   * set when an earlier attempt configured the node but could not restart it (ms since epoch):
   * the attempt starts with the restart instead of configuring the node a second time
   */
  readonly configuredAt?: number;
  /** the go-choria version the node's startup event reported, when it came from one */
  readonly reportedVersion?: string;
  /**
   * the attempt's right to act on the node, taken from the site's lease (claim.ts); without one
   * the attempt may always act (a provisioner working alone)
   */
  readonly claim?: Claim;
}

/**
 * How the monitor port and the history word a defer and a shutdown the helper asked for (its own
 * `msg` is the helper's text, kept out of both): host.ts writes them, history/record.ts knows them.
 */
export const HELPER_ASKED = {
  deferred: 'configuration defered by the helper',
  shutdown: 'shut down on request of the helper',
} as const satisfies Partial<Record<Outcome, string>>;

export interface HostResult {
  readonly outcome: Outcome;
  /**
   * human text in the provisioner's words (for an error, its public message, util/errors.ts): what
   * the monitor port, the node history and the log above debug show, never a helper's output
   */
  readonly message?: string;
  /**
   * the helper's own message with a defer or a shutdown, redacted: logged, never shown on the
   * monitor port nor kept in the history
   */
  readonly helperMessage?: string;
  /** the error in full, redacted, when it says more than `message`: for the log at debug level */
  readonly detail?: string;
  readonly error?: Error;
  /** a failed attempt got as far as configuring the node: the next one can resume at the restart */
  readonly configured?: boolean;
  /**
   * the node is back in provisioning mode and waiting already (an update found installed after its
   * reply and events were lost): offer it again now rather than at the next discovery
   */
  readonly waitingAgain?: boolean;
  /** a success that configured the node: what it was given that expires, and whether it can be renewed */
  readonly credentials?: IssuedCredentials;
}

/**
 * Runs one provisioning attempt. `close`, when present, releases what the runner holds (the
 * lifecycle subscriptions createHostRunner opens); the Provisioner calls it when it stops.
 */
export type HostRunner = ((job: HostJob) => Promise<HostResult>) & { close?: () => void };

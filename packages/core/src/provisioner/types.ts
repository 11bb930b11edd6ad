// The contract between the scheduler and one server's provisioning: the scheduler hands a job to a
// HostRunner and learns the outcome; it never knows the steps.
import type { Logger } from 'winston';
import type { Outcome } from '../metrics/metrics.js';

export interface HostJob {
  readonly identity: string;
  /** ms since epoch when the node was offered (discovery or event) */
  readonly discoveredAt: number;
  /** aborted when the provisioner stops or loses leadership */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** reports the step being worked on, for the status view */
  onStep(step: string): void;
}

export interface HostResult {
  readonly outcome: Outcome;
  /** human text: the defer/shutdown message, or the error */
  readonly message?: string;
  readonly error?: Error;
}

export type HostRunner = (job: HostJob) => Promise<HostResult>;

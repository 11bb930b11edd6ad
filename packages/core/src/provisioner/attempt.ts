// One provisioning attempt as a worker runs it: the runner gets the node's job with the attempt's
// own abort signal, which the provisioner's stop also aborts, and whatever the runner does (a
// custom one may throw) ends as a HostResult.
import type { Logger } from 'winston';
import type { HostJob, HostResult, HostRunner } from '../host/types.js';
import { Claim, type ClaimSource } from '../host/claim.js';
import { failureTexts } from '../util/errors.js';
import type { ActiveEntry } from './active-list.js';

export interface Attempt {
  readonly entry: ActiveEntry;
  /** when an earlier attempt configured the node but could not restart it (the node's history) */
  readonly configuredAt: number | undefined;
  readonly logger: Logger;
  /** the attempt's own; aborted by `stop` too */
  readonly abort: AbortController;
  readonly stop: AbortSignal;
  readonly onStep: (step: string) => void;
  /** the attempt only watches the node now (HostJob.onWatching) */
  readonly onWatching?: () => void;
  /** the site's lease: the attempt takes its claim on the node from it once (HostJob.claim) */
  readonly lease?: ClaimSource;
}

/** Runs the attempt; never throws. */
export async function runAttempt(runner: HostRunner, a: Attempt): Promise<HostResult> {
  const { entry, abort, stop } = a;
  const job: HostJob = {
    identity: entry.identity,
    discoveredAt: entry.discoveredAt,
    ...(a.configuredAt !== undefined ? { configuredAt: a.configuredAt } : {}),
    ...(entry.reportedVersion !== undefined ? { reportedVersion: entry.reportedVersion } : {}),
    signal: abort.signal,
    logger: a.logger,
    onStep: a.onStep,
    ...(a.onWatching !== undefined ? { onWatching: a.onWatching } : {}),
    ...(a.lease !== undefined ? { claim: new Claim(entry.identity, a.lease) } : {}),
  };
  const onStop = (): void => abort.abort(stop.reason);
  stop.addEventListener('abort', onStop, { once: true });
  try {
    return await runner(job);
  } catch (err) {
    // a custom runner that throws once its attempt was cancelled: a cancellation, not a failure
    const outcome = abort.signal.aborted ? 'cancelled' : 'failed';
    const { message, detail } = failureTexts(err);
    return {
      outcome,
      message,
      ...(detail !== undefined ? { detail } : {}),
      error: err instanceof Error ? err : new Error(String(err)),
    };
  } finally {
    stop.removeEventListener('abort', onStop);
  }
}

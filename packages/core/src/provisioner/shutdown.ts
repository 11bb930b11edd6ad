// The order a site stops in once its timers and subscriptions are gone. Every step is bounded: a
// stop must end even when the broker does not answer (the election's and the membership's last
// messages wait for it) or a helper does not exit.
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import type { HelperRunner } from '../host/helper/index.js';
import type { HostRunner } from '../host/types.js';
import { settledWithin } from '../util/deadline.js';
import { formatMs } from '../util/duration.js';
import type { Membership } from './coordination/index.js';
import type { LeaderElection } from './election/index.js';
import type { HistorySync } from './history/index.js';

/** How long each step after the workers may take (the helper pool's own grace and kill wait fit in it). */
const STOP_STEP_MS = 5_000;
/** How long the last node history writes may take to land. */
const HISTORY_SETTLE_MS = 2_000;

/** Who is stopping, for the warnings. */
export interface StoppingSite {
  readonly site: string;
  readonly logger: Logger;
}

/** What a started site holds, each part undefined when it never got that far. */
export interface SiteParts extends StoppingSite {
  readonly election: LeaderElection | undefined;
  readonly membership: Membership | undefined;
  /** aborts the attempts in flight and closes the work queue */
  readonly abortWork: () => void;
  /** the attempts to wait for, read after abortWork() */
  readonly workers: () => readonly Promise<void>[];
  /** how long the workers may take to end their attempts */
  readonly workersTimeoutMs: number;
  readonly runner: HostRunner | undefined;
  readonly historySync: HistorySync;
  readonly helper: HelperRunner | undefined;
  /** the client to close; undefined when the caller owns it */
  readonly client: ChoriaClient | undefined;
}

/** Waits for one step at most `ms`; false (after a warning naming it) when it did not finish. */
export async function boundedStep(
  s: StoppingSite,
  what: string,
  step: Promise<unknown> | undefined,
  ms = STOP_STEP_MS,
): Promise<boolean> {
  if (step === undefined || (await settledWithin(step, ms))) return true;
  s.logger.warn(
    `Stopping provisioner for site "${s.site}": ${what} did not finish within ${formatMs(ms)}, going on without it`,
  );
  return false;
}

export async function closeClient(s: StoppingSite, client: ChoriaClient): Promise<void> {
  await boundedStep(s, 'closing the broker connection', client.close());
}

export async function stopParts(p: SiteParts): Promise<void> {
  // A leader keeps its term (its key refreshed) until its workers are done: a configure already
  // sent is finished with its restart before the attempt ends (the commit grace), and a term let
  // lapse then would let the next leader find the same node, still answering in provisioning mode
  // during its restart, and work on it beside this one. A standby stops campaigning first, so that
  // it cannot win in its last seconds and hold the key from the instances that stay.
  const leading = p.election?.isLeader === true;
  if (!leading) await boundedStep(p, 'the leader election', p.election?.stop());
  // leave first: the others take over this instance's queued share at once
  await boundedStep(p, 'leaving the coordination group', p.membership?.stop());
  p.abortWork();
  if (!(await settledWithin(Promise.allSettled(p.workers()), p.workersTimeoutMs)))
    p.logger.warn(`Workers did not finish within ${p.workersTimeoutMs} ms, closing anyway`);
  if (leading) await boundedStep(p, 'the leader election', p.election?.stop());
  // after the workers: an attempt finishing its restart may still look for the node's events
  p.runner?.close?.();
  // the last attempts' records, so the next process (or another instance) knows them
  await boundedStep(
    p,
    'writing the node history',
    p.historySync.stop(HISTORY_SETTLE_MS),
    HISTORY_SETTLE_MS + STOP_STEP_MS,
  );
  if (p.helper !== undefined && !(await boundedStep(p, 'closing the helper', p.helper.close()))) p.helper.killNow?.();
  if (p.client !== undefined) await closeClient(p, p.client);
}

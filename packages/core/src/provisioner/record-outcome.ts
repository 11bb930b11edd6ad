// What an ended attempt leaves behind besides the entry's next state (active-list.ts settles
// that): the metrics, the node's history (back-off and quarantine), the throughput chart, the
// count of nodes finished, and, for a success, the note to the other active/active members. The
// outcome table (OUTCOME_RULES) says what each outcome means; this applies it.
import type { NodeIdentity } from '../choria/identity.js';
import type { Logger } from 'winston';
import { LogBudget } from '../util/log-budget.js';
import { OUTCOMES, outcomeMeaning, type HostResult, type Outcome } from '../host/types.js';
import type { ProvisionerMetrics } from '../metrics/metrics.js';
import type { NodeHistory } from './history/index.js';
import { RecentThroughput, type ThroughputSeries } from './throughput.js';

/** One attempt that ended. */
export interface EndedAttempt {
  readonly identity: NodeIdentity;
  /** when this round found the node */
  readonly discoveredAt: number;
  readonly startedAt: number;
  readonly endedAt: number;
  readonly result: HostResult;
}

export interface OutcomeRecorderOptions {
  readonly metrics: ProvisionerMetrics;
  /** where the sums of the failures left out of the log go */
  readonly logger: Logger;
  readonly history: NodeHistory;
  /** a node was finished here (provisioned, shut down, upgraded) */
  readonly onSuccess: (identity: NodeIdentity) => void;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export class OutcomeRecorder {
  readonly #opts: OutcomeRecorderOptions;
  readonly #throughput = new RecentThroughput();
  readonly #counts = new Map<Outcome, number>(OUTCOMES.map((o) => [o, 0]));
  #finished = 0;
  /** node failures are written within this budget: forged servers can fail as fast as they are tried */
  readonly logBudget: LogBudget;

  constructor(opts: OutcomeRecorderOptions) {
    this.#opts = opts;
    this.logBudget = new LogBudget(opts.logger);
  }

  /** Nodes this instance finished (provisioned, shut down, upgraded) since it started. */
  get finished(): number {
    return this.#finished;
  }

  /** How many attempts of this instance ended with each outcome since it started. */
  outcomeCounts(): Record<Outcome, number> {
    return Object.fromEntries(this.#counts) as Record<Outcome, number>;
  }

  throughput(now: number): ThroughputSeries {
    return this.#throughput.series(now);
  }

  /** Records one ended attempt; `logger` (the attempt's) tells of a quarantine or a back-off it caused. */
  record(attempt: EndedAttempt, logger: Logger): void {
    const { identity, result, endedAt: now } = attempt;
    const meaning = outcomeMeaning(result.outcome);
    this.#opts.metrics.attemptEnded(result.outcome);
    this.#counts.set(result.outcome, (this.#counts.get(result.outcome) ?? 0) + 1);
    this.#throughput.note(meaning, now);
    const record = this.#opts.history.attempted(identity, {
      outcome: result.outcome,
      message: result.message,
      at: now,
      durationMs: now - attempt.startedAt,
      configured: result.configured === true,
      discoveredAt: attempt.discoveredAt,
      credentials: result.credentials,
    });
    if (record.quarantinedAt === now)
      logger.warn(
        `Quarantined ${identity} after ${record.failures} failed attempts in a row: ` +
          `release it with the API or restart it`,
      );
    else if (meaning === 'failure' && record.notBefore !== undefined)
      logger.info(`Not trying ${identity} again before ${iso(record.notBefore)} (failure ${record.failures} in a row)`);
    if (meaning === 'success') {
      this.#finished++;
      this.#opts.onSuccess(identity);
    }
  }
}

/**
 * The line that tells how an attempt ended, with its public message; the full text follows at
 * debug level. `lockWaitUntil`: when a node waiting for its lock is tried again.
 */
export function logOutcome(
  logger: Logger,
  budget: LogBudget,
  identity: string,
  result: HostResult,
  lockWaitUntil: number | undefined,
): void {
  switch (result.outcome) {
    case 'provisioned':
      logger.info(`Provisioned ${identity}`);
      break;
    case 'shutdown':
      // the helper's message was logged as the shutdown was sent (host.ts)
      logger.info(`Shut down ${identity}: ${result.message ?? 'on request of the helper'}`);
      break;
    case 'deferred':
      logger.warn(
        `Deferred ${identity} on request of the ` +
          `helper${result.helperMessage !== undefined ? `: ${result.helperMessage}` : ', which gave no message'}`,
      );
      break;
    case 'upgraded':
      logger.info(`Upgraded ${identity}, it will be provisioned when it comes back`);
      break;
    case 'gone':
      // a forged server that answers and then goes silent ends here: within the log's budget
      if (budget.allows('node-failure'))
        logger.warn(`Dropped ${identity} for now: ${result.message ?? 'it stopped answering'}`);
      break;
    case 'dry_run':
      logger.info(`${identity}: ${result.message ?? 'dry run'}`);
      break;
    case 'cancelled':
      logger.info(`Stopped provisioning ${identity} for now (not a failure): ${result.message ?? 'cancelled'}`);
      break;
    case 'skipped_locked':
      if (lockWaitUntil !== undefined)
        logger.info(
          `Waiting for the provisioning lock of ${identity}: another provisioner holds it; ` +
            `trying again at ${iso(lockWaitUntil)}`,
        );
      else logger.info(`Skipping ${identity}: another provisioner holds its provisioning lock`);
      break;
    default:
      if (budget.allows('node-failure'))
        logger.error(`Could not provision ${identity}: ${result.message ?? result.outcome}`);
  }
  // the message is the public one (what the monitor port shows); the full text, redacted, is for debugging
  if (result.detail !== undefined && logger.isDebugEnabled())
    logger.debug(`How the attempt on ${identity} ended, in full: ${result.detail}`);
}

// Leader election for one site: only the leader provisions. Winning resumes the provisioner (and
// it looks for nodes at once); losing pauses it (and it forgets every node it knew: the new leader
// starts over). The metrics follow every campaign.
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import type { ProvisionerConfig } from '../config/types.js';
import type { ProvisionerMetrics } from '../metrics/metrics.js';
import type { PauseFlag } from '../util/pause.js';
import { LeaderElection } from './election/index.js';

export interface LeadershipOptions {
  readonly client: ChoriaClient;
  readonly config: ProvisionerConfig;
  /** the Choria identity this instance campaigns with */
  readonly identity: string;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  /** resumed on a win, paused on a loss */
  readonly pause: PauseFlag;
  /** maximum random wait before the first campaign (LeaderElectionOptions.splayMs) */
  readonly splayMs?: number | undefined;
  /** after resuming */
  readonly onWon: () => void;
  /** after pausing */
  readonly onLost: () => void;
}

/** Starts campaigning for the site's election key; stop() the election to leave. */
export function startLeadership(opts: LeadershipOptions): LeaderElection {
  const { config, identity, metrics, logger } = opts;
  const key = config.leaderElectionKey;
  const election = new LeaderElection({
    nc: opts.client.nats,
    identity,
    key,
    bucket: config.leaderElectionBucket,
    apiPrefix: config.streamsApiPrefix,
    logger,
    ...(opts.splayMs !== undefined ? { splayMs: opts.splayMs } : {}),
    onWon: () => {
      metrics.setElectionLeader(key, identity, true);
      logger.warn('Became leader after winning election');
      opts.pause.resume();
      opts.onWon();
    },
    onLost: () => {
      metrics.setElectionLeader(key, identity, false);
      logger.warn('Lost leadership');
      opts.pause.pause();
      opts.onLost();
    },
    onCampaign: (state) => metrics.electionCampaign(key, identity, state),
    onIntervalChange: (s) => metrics.setElectionInterval(key, identity, s),
  });
  metrics.setElectionLeader(key, identity, false);
  election.start();
  return election;
}

// The node history of one site as a Provisioner keeps it: the records in memory (back-off and
// quarantine by the site's policy) and their sync with the history bucket, through the
// choria-account connection when the provisioner logs in as the `provisioner` user.
import type { Logger } from 'winston';
import type { RefusedIdentities } from '../choria/identity.js';
import type { ChoriaSettings, ProvisionerConfig } from '../config/types.js';
import { PROVISIONER_NATS_USER } from '../config/choria-config.js';
import { errorText } from '../util/values.js';
import { HistorySync, NodeHistory } from './history/index.js';
import { processToken } from './node-claims.js';
import type { HistoryConnection } from './history/index.js';

export interface SiteHistoryOptions {
  readonly config: ProvisionerConfig;
  readonly choria: ChoriaSettings;
  readonly logger: Logger;
  /** `run --dry-run`: read the bucket, write nothing */
  readonly readOnly: boolean;
  readonly retryMs?: number | undefined;
  /** the connection to the choria account (site-connection.ts) */
  readonly choriaAccount: () => HistoryConnection;
  /** where records whose identity fails the identity rule go */
  readonly refusals: RefusedIdentities;
}

export function siteHistory(opts: SiteHistoryOptions): { history: NodeHistory; sync: HistorySync } {
  const { config, logger } = opts;
  const history = new NodeHistory({
    policy: {
      backoffMs: config.retryBackoffMs,
      backoffMaxMs: config.retryBackoffMaxMs,
      quarantineAfter: config.quarantineAfter,
    },
    instance: opts.choria.identity,
    process: processToken(opts.choria.identity),
    ttlMs: config.historyTtlMs,
    onWriteError: (err) =>
      logger.warn(
        `Could not write the node history to bucket ${config.historyBucket}, keeping changes until it can: ` +
          `${errorText(err)}`,
      ),
    onWritten: () => logger.info(`Writing the node history to bucket ${config.historyBucket} again`),
    onWriteRefused: (err) => logger.warn(`Not writing a record of the node history again: ${errorText(err)}`),
  });
  const sync = new HistorySync({
    history,
    config,
    logger,
    readOnly: opts.readOnly,
    refusals: opts.refusals,
    ...(opts.retryMs !== undefined ? { retryMs: opts.retryMs } : {}),
    ...(opts.choria.natsUser === PROVISIONER_NATS_USER ? { secondary: opts.choriaAccount() } : {}),
  });
  return { history, sync };
}

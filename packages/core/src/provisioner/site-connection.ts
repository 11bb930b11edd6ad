// The broker connections of one site: the provisioner's own (retried until it is stopped, and
// announced with a startup event) and, when it logs in as the `provisioner` user, a second one to
// the choria account for the node history.
import type { Logger } from 'winston';
import { ChoriaClient } from '../choria/client.js';
import { connectChoria } from '../choria/connector.js';
import type { RefusedIdentities } from '../choria/identity.js';
import type { ChoriaSettings } from '../config/types.js';
import { errorText } from '../util/values.js';
import type { HistoryConnection } from './history/index.js';

export interface SiteConnectionOptions {
  readonly site: string;
  readonly choria: ChoriaSettings;
  readonly logger: Logger;
  /** aborted by stop(): ends the retries */
  readonly signal: AbortSignal;
  /** where the client's identities that fail the identity rule go */
  readonly refusals: RefusedIdentities;
}

/** The client retries an unreachable broker by itself (logging each try); undefined when `signal` stopped it. */
export async function connectSite(opts: SiteConnectionOptions): Promise<ChoriaClient | undefined> {
  try {
    return await ChoriaClient.connect(opts.choria, {
      logger: opts.logger,
      name: `choria-provisioner ${opts.site}`.trim(),
      signal: opts.signal,
      refusals: opts.refusals,
    });
  } catch (err) {
    if (opts.signal.aborted) return undefined;
    throw new Error(`could not start the provisioner for site "${opts.site}": ${errorText(err)}`, { cause: err });
  }
}

/**
 * The provisioner logs in as the `provisioner` user, which a Choria Broker puts in its
 * provisioning account (no JetStream there); the same settings without that login reach the
 * choria account, where the node history can live (history-sync.ts).
 */
export function choriaAccountConnection(opts: SiteConnectionOptions): HistoryConnection {
  const settings = { ...opts.choria, natsUser: undefined, natsPassword: undefined };
  return {
    kind: 'choria',
    connect: () =>
      connectChoria(settings, {
        logger: opts.logger,
        name: `choria-provisioner ${opts.site} history`.trim(),
        maxConnectAttempts: 3,
        signal: opts.signal,
      }),
  };
}

/** Tells the fleet a provisioner started (a failure is only logged: provisioning does not depend on it). */
export async function announceStartup(client: ChoriaClient, version: string, logger: Logger): Promise<void> {
  try {
    await client.publishStartupEvent({ component: 'provisioner', version });
  } catch (err) {
    logger.warn(`Could not publish the provisioner startup event: ${errorText(err)}`);
  }
}

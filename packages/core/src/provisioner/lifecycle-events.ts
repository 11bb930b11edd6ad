// The nodes' lifecycle events a site listens to: a provisioning-mode server announces its startup
// (a node to provision, released from a quarantine the reboot may have cured) and a restart or
// shutdown before it goes (whoever provisioned it is done with it).
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import type { ReceivedLifecycleEvent } from '../choria/lifecycle.js';
import type { IdentityRefusedError, NodeIdentity, RefusedIdentities } from '../choria/identity.js';
import type { ProvisionerConfig } from '../config/types.js';
import type { ProvisionerMetrics } from '../metrics/metrics.js';
import type { DiscoverySource } from './active-list.js';
import type { NodeHistory } from './history/index.js';

export interface NodeLifecycleOptions {
  readonly config: ProvisionerConfig;
  readonly metrics: ProvisionerMetrics;
  readonly logger: Logger;
  readonly history: NodeHistory;
  /** where events whose identity fails the identity rule go */
  readonly refusals: RefusedIdentities;
  /** whether a startup event may add its node now (not while paused: Provisioner.acceptsStartups) */
  readonly acceptsStartups: () => boolean;
  readonly offer: (identity: NodeIdentity, source: DiscoverySource, reportedVersion?: string) => boolean;
  /** the node announced a restart or shutdown */
  readonly leftProvisioning: (identity: string) => void;
}

/** Subscribes to the startup and shutdown events of the site's provisioning component; returns the unsubscribe. */
export function listenToNodeLifecycle(client: ChoriaClient, o: NodeLifecycleOptions): () => void {
  const onInvalid = (err: Error): void => {
    o.metrics.eventError();
    o.logger.debug(`Ignoring an invalid lifecycle event: ${err.message}`);
  };
  const onEvent = (ev: ReceivedLifecycleEvent): void => {
    if (ev.type === 'shutdown') return o.leftProvisioning(ev.identity);
    if (ev.type !== 'startup') return;
    // the node booted again: whatever made it fail may be gone,
    // and what it was configured with before is no longer a given
    const released = o.history.release(ev.identity, Date.now(), {
      rebooted: true,
      keepQuarantine: !o.config.quarantineReleaseOnStartup,
    });
    if (released) o.logger.info(`Releasing ${ev.identity} from quarantine: it started again`);
    if (!o.acceptsStartups()) {
      o.logger.debug(`Ignoring the startup event of ${ev.identity} while paused`);
      return;
    }
    o.offer(ev.identity, 'event', ev.version === '' ? undefined : ev.version);
  };
  const onRefused = (err: IdentityRefusedError): void => o.refusals.refuse(err.text, err.why, 'event');
  const subs = (['startup', 'shutdown'] as const).map((type) =>
    client.subscribeLifecycle(type, o.config.lifecycleComponent, onEvent, { onInvalid, onRefused }),
  );
  return () => {
    for (const sub of subs) sub.unsubscribe();
  };
}

// One broadcast discovery of the nodes in provisioning mode (the choria_provision agent), counted
// in the metrics. A failure is logged, not thrown: the next interval tries again.
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import type { NodeIdentity } from '../choria/identity.js';
import type { ProvisionerMetrics } from '../metrics/metrics.js';
import { errorText } from '../util/values.js';

/**
 * The identities that answered; none when discovery failed or `signal` stopped it. `onFound`, when
 * given, hears each node as its reply arrives (see ChoriaClient.discover), and the discovery then
 * listens for its whole time limit: the nodes found are at work already, so ending at the first
 * quiet spell would save nothing, and a busy fleet answers late and in bursts: servers starting up
 * together leave gaps between their replies longer than a quiet-spell window, and a discovery that
 * ended at the first gap would find only a handful of them.
 */
export async function discoverNodes(
  client: ChoriaClient,
  metrics: ProvisionerMetrics,
  logger: Logger,
  signal: AbortSignal,
  onFound?: (identity: NodeIdentity) => void,
): Promise<NodeIdentity[]> {
  metrics.discoverCycle();
  try {
    return await client.discover({
      agent: 'choria_provision',
      signal,
      ...(onFound === undefined ? {} : { onFound, listenToEnd: true }),
    });
  } catch (err) {
    if (signal.aborted) return [];
    metrics.discoveryError();
    logger.error(`Discovery failed: ${errorText(err)}`);
    return [];
  }
}

// The gauges of one site: how busy it is (set whenever the list or the queue changes) and how it
// shares the fleet (set once a second by the sweep: a dashboard needs no fresher figure, the hot
// path no more gauge writes).
import type { CoordinationMode } from '../config/types.js';
import type { ProvisionerMetrics } from '../metrics/metrics.js';
import type { ActiveList } from './active-list.js';
import type { NodeHistory } from './history/index.js';
import type { WorkPolicy } from './work-policy.js';

export interface SiteGaugeSources {
  readonly metrics: ProvisionerMetrics;
  /** this instance's Choria identity */
  readonly identity: string;
  readonly mode: CoordinationMode;
  readonly list: ActiveList;
  readonly queue: { readonly length: number };
  readonly policy: WorkPolicy;
  readonly history: NodeHistory;
  readonly busyWorkers: () => number;
}

export class SiteGauges {
  readonly #s: SiteGaugeSources;

  constructor(sources: SiteGaugeSources) {
    this.#s = sources;
  }

  /** Busy workers, nodes on the list, entries in the queue. */
  load(): void {
    const { metrics, list, queue } = this.#s;
    metrics.setBusyWorkers(this.#s.busyWorkers());
    metrics.setWaitingNodes(list.size);
    metrics.setWorkQueueEntries(queue.length);
  }

  /** Nodes owned, members, foreign nodes, quarantined nodes. */
  counts(): void {
    const { metrics, identity, list, policy } = this.#s;
    metrics.setCoordination(identity, list.size, policy.membership?.members().length ?? 1, policy.foreignCount);
    metrics.setQuarantined(this.#s.history.quarantinedCount());
  }

  /** The coordination this instance runs as (after the membership changed), with the counts. */
  coordination(): void {
    this.#s.metrics.setCoordinationMode(this.#s.identity, this.#s.policy.effective(this.#s.mode));
    this.counts();
  }
}

// What a site reports about itself: the /status snapshot, the /readyz answer and the pages of
// its nodes (/nodes).
import type { RenewalView } from './renewal/renewer.js';
import type { CoordinationMode, ProvisionerConfig } from '../config/types.js';
import type { EffectiveCoordination } from '../metrics/metrics.js';
import type { NodeQuery } from './queries.js';
import type { ActiveList } from './active-list.js';
import type { MembershipView } from './coordination/index.js';
import type { HistoryStatus, HistorySync, NodeHistory } from './history/index.js';
import { describeNodes, knownNodes, pageOf, type HostStatus, type NodePage } from './node-listing.js';
import type { OutcomeRecorder } from './record-outcome.js';
import type { ThroughputSeries } from './throughput.js';
import type { WorkPolicy } from './work-policy.js';

export interface ProvisionerStatus {
  site: string;
  identity: string;
  version: string;
  connected: boolean;
  leaderElection: boolean;
  leader?: boolean;
  paused: boolean;
  /** `run --dry-run`: nothing that changes a node is sent */
  dryRun: boolean;
  coordination: CoordinationStatus;
  history: HistoryStatus;
  queue: number;
  queueCapacity: number;
  busyWorkers: number;
  /** attempts watching a node after a lost reply (lost-reply.ts), which gave their worker up */
  watchingNodes: number;
  workers: number;
  hostCounts: Record<string, number>;
  hosts: HostStatus[];
  hostsTruncated: boolean;
  /**
   * set by the monitor port when the site has a monitor_api_token and the request did not present
   * it: `hosts` is empty (hostCounts still counts every node)
   */
  hostsNeedToken?: true;
  /**
   * nodes this instance finished (provisioned, shut down, upgraded)
   * and failed attempts, per slot over the last 10 minutes
   */
  recent: ThroughputSeries;
  /** credential renewals (renewal_choria_config set): the counts, and up to `limit` nodes of each kind */
  renewals?: RenewalView;
}

/** How this instance shares the fleet with the other instances of its site. */
export interface CoordinationStatus {
  /** the configured mode */
  mode: CoordinationMode;
  /** what it runs as: lock_only when active_active could not form a membership */
  effective: EffectiveCoordination;
  /** the Choria identity the other instances and the node lock know this instance by */
  instance: string;
  /** active_active: the group, its state and the live members with what each reports */
  membership?: MembershipView;
  /** active_active: nodes seen that another member owns */
  foreignNodes?: number;
}

/** One site's answer to /readyz. */
export interface SiteReadiness {
  site: string;
  ready: boolean;
  reason: string;
}

export type SiteLifecycle = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/** The parts of a site a report reads, fixed when the Provisioner is built. */
export interface SiteReportParts {
  readonly config: ProvisionerConfig;
  /** this instance's Choria identity */
  readonly identity: string;
  readonly version: string;
  readonly dryRun: boolean;
  readonly policy: WorkPolicy;
  readonly list: ActiveList;
  readonly history: NodeHistory;
  readonly historySync: HistorySync;
  readonly queue: { readonly length: number; readonly capacity: number };
  readonly recorder: OutcomeRecorder;
}

/** What changes as the site runs. */
export interface SiteMoment {
  readonly lifecycle: SiteLifecycle;
  readonly connected: boolean;
  /** with leader election: whether this instance leads (undefined without an election) */
  readonly leader: boolean | undefined;
  readonly paused: boolean;
  readonly busyWorkers: number;
  readonly watchingNodes: number;
}

/** What a site says about itself: /readyz, /status and /nodes. */
export class SiteReport {
  readonly #p: SiteReportParts;
  readonly #moment: () => SiteMoment;

  constructor(parts: SiteReportParts, moment: () => SiteMoment) {
    this.#p = parts;
    this.#moment = moment;
  }

  /**
   * /readyz: connected, and able to provision: the leader with leader election, a member of a
   * formed group (or lock-only) with active/active, simply connected without either.
   */
  readiness(): SiteReadiness {
    const { config, policy } = this.#p;
    const m = this.#moment();
    const site = config.site;
    if (m.lifecycle !== 'running')
      return {
        site,
        ready: false,
        reason: m.lifecycle === 'new' || m.lifecycle === 'starting' ? 'starting' : 'stopped',
      };
    if (!m.connected) return { site, ready: false, reason: 'not connected to the broker' };
    if (config.leaderElection && m.leader !== true)
      return { site, ready: false, reason: 'standby: another instance leads the election' };
    if (!policy.ready) return { site, ready: false, reason: 'active/active membership still forming' };
    return {
      site,
      ready: true,
      reason: policy.effective(config.coordination) === 'lock_only' ? 'ready (active/active lock-only)' : 'ready',
    };
  }

  /** The /status snapshot: every node counted, the first `limit` described. */
  status(limit: number, now: number): ProvisionerStatus {
    const { config, policy, identity } = this.#p;
    const m = this.#moment();
    const membership = policy.membership;
    return {
      site: config.site,
      identity,
      version: this.#p.version,
      connected: m.connected,
      leaderElection: config.leaderElection,
      ...(m.leader !== undefined ? { leader: m.leader } : {}),
      paused: m.paused,
      dryRun: this.#p.dryRun,
      coordination: {
        mode: config.coordination,
        effective: policy.effective(config.coordination),
        instance: identity,
        ...(membership !== undefined ? { membership: membership.view(), foreignNodes: policy.foreignCount } : {}),
      },
      history: this.#p.historySync.status(),
      queue: this.#p.queue.length,
      queueCapacity: this.#p.queue.capacity,
      busyWorkers: m.busyWorkers,
      watchingNodes: m.watchingNodes,
      workers: config.workers,
      ...describeNodes(knownNodes(this.#p.list, this.#p.history), limit, now),
      recent: this.#p.recorder.throughput(now),
    };
  }

  /**
   * One page of the site's nodes, filtered by state and identity, sorted (ties by identity):
   * only the page is described, so paging through 100,000 nodes stays cheap.
   */
  nodes(query: Omit<NodeQuery, 'site'>, now: number): NodePage {
    return pageOf(knownNodes(this.#p.list, this.#p.history), query, this.#p.config.site, now);
  }
}

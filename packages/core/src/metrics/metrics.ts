// Every upstream metric with the same names, types and the `site` label, registered
// once per prom-client registry and shared by every provisioner instance using that registry: the
// instances differ only by their `site` label value, so one /metrics page serves several sites.
import {
  Counter,
  Gauge,
  Histogram,
  Registry,
  Summary,
  type LabelValues,
  type MetricObjectWithValues,
  type MetricValueWithName,
} from 'prom-client';

import type { IdentitySource } from '../choria/identity.js';
import {
  OUTCOMES,
  OUTCOME_RULES,
  type HostMetrics,
  type LostReplyFinding,
  type Outcome,
  type RpcName,
} from '../host/types.js';

type Labels<T extends string> = T;

interface MetricSet {
  discoverCycles: Counter<Labels<'site'>>;
  discovered: Counter<Labels<'site'>>;
  eventDiscovered: Counter<Labels<'site'>>;
  discoveryErrors: Counter<Labels<'site'>>;
  rpcTime: Summary<Labels<'site' | 'rpc'>>;
  rpcErrors: Counter<Labels<'site' | 'rpc'>>;
  helperTime: Summary<Labels<'site'>>;
  helperDuration: Histogram<Labels<'site'>>;
  helperErrors: Counter<Labels<'site'>>;
  helperShutdownRequests: Counter<Labels<'site'>>;
  provisionErrors: Counter<Labels<'site'>>;
  provisioned: Counter<Labels<'site'>>;
  busyWorkers: Gauge<Labels<'site'>>;
  waitingNodes: Gauge<Labels<'site'>>;
  workQueueEntries: Gauge<Labels<'site'>>;
  paused: Gauge<Labels<'site'>>;
  outcomes: Counter<Labels<'site' | 'outcome'>>;
  eventErrors: Counter<Labels<'site'>>;
  refusedIdentities: Counter<Labels<'site' | 'source'>>;
  queueFull: Counter<Labels<'site'>>;
  lostReplies: Counter<Labels<'site' | 'rpc' | 'finding'>>;
  electionCampaigns: Counter<Labels<'election' | 'identity' | 'state'>>;
  electionLeader: Gauge<Labels<'election' | 'identity'>>;
  electionInterval: Gauge<Labels<'election' | 'identity'>>;
  coordinationMode: Gauge<Labels<'site' | 'identity' | 'mode'>>;
  coordinationMembers: Gauge<Labels<'site' | 'identity'>>;
  ownedNodes: Gauge<Labels<'site' | 'identity'>>;
  foreignNodes: Gauge<Labels<'site' | 'identity'>>;
  handedOver: Counter<Labels<'site' | 'identity' | 'direction'>>;
  quarantined: Gauge<Labels<'site'>>;
  renewals: Counter<Labels<'site' | 'event'>>;
  renewalsDue: Gauge<Labels<'site'>>;
  renewalsInFlight: Gauge<Labels<'site'>>;
  renewalsStopped: Gauge<Labels<'site'>>;
  candidates: Gauge<Labels<'site'>>;
  candidatesEnded: Counter<Labels<'site' | 'how'>>;
  historyRecords: Gauge<Labels<'site'>>;
}

/** How a candidate (an identity heard, not yet known to answer) left admission (provisioner/admission.ts). */
export type CandidateEnd = 'admitted' | 'unanswered' | 'crowded_out';

/** What happened to a renewal: `reprovision` sent, the node provisioned again, or the renewal failed. */
export type RenewalEvent = 'sent' | 'completed' | 'failed';

/** What `coordination_mode` reports: the configured mode, or lock_only when active/active could not form. */
export const COORDINATION_MODES = ['none', 'leader_election', 'active_active', 'lock_only'] as const;
export type EffectiveCoordination = (typeof COORDINATION_MODES)[number];

function counter<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): Counter<L> {
  const existing = registry.getSingleMetric(name);
  if (existing !== undefined) return existing as Counter<L>;
  return new Counter<L>({ name, help, labelNames, registers: [registry] });
}

function gauge<L extends string>(registry: Registry, name: string, help: string, labelNames: readonly L[]): Gauge<L> {
  const existing = registry.getSingleMetric(name);
  if (existing !== undefined) return existing as Gauge<L>;
  return new Gauge<L>({ name, help, labelNames, registers: [registry] });
}

/**
 * A summary that keeps only the count and sum of each label set. Go's default summaries export
 * only _sum and _count, which is what the dashboard divides; prom-client's Summary feeds every
 * observation into a t-digest even when no quantile is exported, a cost paid four times a node
 * for nothing. Only observe(), get() and reset() are used on these metrics.
 */
class SumCountSummary<L extends string> extends Summary<L> {
  readonly #name: string;
  readonly #help: string;
  readonly #labelNames: readonly L[];
  // Not a #private field: the base constructor calls reset() before subclass fields exist.
  private series: Map<string, { labels: LabelValues<L>; sum: number; count: number }> | undefined = new Map();

  constructor(name: string, help: string, labelNames: readonly L[], registry: Registry) {
    super({ name, help, labelNames, percentiles: [], registers: [registry] });
    this.#name = name;
    this.#help = help;
    this.#labelNames = labelNames;
  }

  override observe(labelsOrValue: LabelValues<L> | number, value?: number): void {
    const labels: LabelValues<L> = typeof labelsOrValue === 'number' ? {} : labelsOrValue;
    const v = typeof labelsOrValue === 'number' ? labelsOrValue : value;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new TypeError(`Value is not a valid number: ${String(v)}`);
    const key = this.#labelNames.map((n) => String(labels[n] ?? '')).join('\u0000');
    const series = this.series?.get(key);
    if (series === undefined) this.series?.set(key, { labels: { ...labels }, sum: v, count: 1 });
    else {
      series.sum += v;
      series.count++;
    }
  }

  override async get(): Promise<MetricObjectWithValues<MetricValueWithName<L>>> {
    const values: MetricValueWithName<L>[] = [];
    for (const s of this.series?.values() ?? []) {
      values.push({ metricName: `${this.#name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.#name}_count`, labels: s.labels, value: s.count });
    }
    // What prom-client's own Summary returns; its typings declare `type` as a numeric enum while
    // the registry compares and prints the runtime string.
    const metric = { name: this.#name, help: this.#help, type: 'summary', values, aggregator: 'sum' };
    return metric as unknown as MetricObjectWithValues<MetricValueWithName<L>>;
  }

  override reset(): void {
    for (const s of this.series?.values() ?? []) {
      s.sum = 0;
      s.count = 0;
    }
  }
}

/** Helper run buckets, in seconds: from an in-process function to the default 10 s timeout. */
export const HELPER_DURATION_BUCKETS: readonly number[] = [
  0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

function histogram<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
  buckets: readonly number[],
): Histogram<L> {
  const existing = registry.getSingleMetric(name);
  if (existing !== undefined) return existing as Histogram<L>;
  return new Histogram<L>({ name, help, labelNames, buckets: [...buckets], registers: [registry] });
}

function summary<L extends string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[],
): Summary<L> {
  const existing = registry.getSingleMetric(name);
  if (existing !== undefined) return existing as Summary<L>;
  return new SumCountSummary<L>(name, help, labelNames, registry);
}

/**
 * Registers every metric in `registry`, or finds it there when another instance registered it. /metrics
 * lists the metrics in the order they were registered: the order of the groups below and within them.
 */
function register(registry: Registry): MetricSet {
  return {
    ...discoveryMetrics(registry),
    ...rpcAndHelperMetrics(registry),
    ...workMetrics(registry),
    ...lossMetrics(registry),
    ...admissionMetrics(registry),
    ...electionMetrics(registry),
    ...coordinationMetrics(registry),
    ...renewalMetrics(registry),
  };
}

/** Credential renewals (renewal_*): due now, in flight across the site, and each one's course. */
function renewalMetrics(
  registry: Registry,
): Pick<MetricSet, 'renewals' | 'renewalsDue' | 'renewalsInFlight' | 'renewalsStopped'> {
  return {
    renewals: counter(
      registry,
      'choria_provisioner_renewals',
      'Credential renewals by this instance: reprovision sent, the node provisioned again (completed), or failed',
      ['site', 'event'] as const,
    ),
    renewalsDue: gauge(
      registry,
      'choria_provisioner_renewals_due',
      'Renewable nodes whose renewal time has come and that are not renewing yet',
      ['site'] as const,
    ),
    renewalsInFlight: gauge(
      registry,
      'choria_provisioner_renewals_in_flight',
      'Nodes of the site sent back to provisioning for their renewal and not provisioned again yet',
      ['site'] as const,
    ),
    renewalsStopped: gauge(
      registry,
      'choria_provisioner_renewals_stopped',
      '1 while the renewals of the site are stopped after failures and wait for an operator to resume them',
      ['site'] as const,
    ),
  };
}

/** How many discovery cycles ran and failed, and how many nodes discovery and startup events found. */
function discoveryMetrics(
  registry: Registry,
): Pick<MetricSet, 'discoverCycles' | 'discovered' | 'eventDiscovered' | 'discoveryErrors'> {
  const s = ['site'] as const;
  return {
    discoverCycles: counter(registry, 'choria_provisioner_discover_cycles', 'How many discovery cycles were run', s),
    discovered: counter(
      registry,
      'choria_provisioner_discovered',
      'How many nodes were added to the provisioning list by discovery',
      s,
    ),
    eventDiscovered: counter(
      registry,
      'choria_provisioner_event_discovered',
      'How many nodes were added to the provisioning list by startup events',
      s,
    ),
    discoveryErrors: counter(registry, 'choria_provisioner_discovery_errors', 'How many discovery runs failed', s),
  };
}

/** How long the RPCs and the helper took, and how often they failed. */
function rpcAndHelperMetrics(
  registry: Registry,
): Pick<
  MetricSet,
  'rpcTime' | 'rpcErrors' | 'helperTime' | 'helperDuration' | 'helperErrors' | 'helperShutdownRequests'
> {
  const s = ['site'] as const;
  return {
    rpcTime: summary(registry, 'choria_provisioner_rpc_time', 'How long each RPC try took, in seconds', [
      'site',
      'rpc',
    ] as const),
    rpcErrors: counter(registry, 'choria_provisioner_rpc_errors', 'How many RPC steps failed after all their tries', [
      'site',
      'rpc',
    ] as const),
    helperTime: summary(registry, 'choria_provisioner_helper_time', 'How long the helper took, in seconds', s),
    // the upstream summary has no quantiles; a histogram gives the dashboard its latency quantiles
    helperDuration: histogram(
      registry,
      'choria_provisioner_helper_duration_seconds',
      'How long the helper took, in seconds, in buckets',
      s,
      HELPER_DURATION_BUCKETS,
    ),
    helperErrors: counter(registry, 'choria_provisioner_helper_errors', 'How many times the helper failed', s),
    helperShutdownRequests: counter(
      registry,
      'choria_provisioner_helper_shutdown_requests',
      'How many nodes were shut down on request of the helper',
      s,
    ),
  };
}

/** How the attempts ended, and how busy the workers and the work queue are. */
function workMetrics(
  registry: Registry,
): Pick<
  MetricSet,
  'provisionErrors' | 'provisioned' | 'busyWorkers' | 'waitingNodes' | 'workQueueEntries' | 'paused' | 'outcomes'
> {
  const s = ['site'] as const;
  return {
    provisionErrors: counter(
      registry,
      'choria_provisioner_provision_errors',
      'How many provisioning attempts failed, including defers and stale skips',
      s,
    ),
    provisioned: counter(
      registry,
      'choria_provisioner_provisioned',
      'How many provisioning attempts ended successfully, including shutdowns and upgrades',
      s,
    ),
    busyWorkers: gauge(registry, 'choria_provisioner_busy_workers', 'How many workers are provisioning a node', s),
    waitingNodes: gauge(registry, 'choria_provisioner_waiting_nodes', 'How many nodes are on the provisioning list', s),
    workQueueEntries: gauge(
      registry,
      'choria_provisioner_work_queue_entries',
      'How many entries wait in the work queue',
      s,
    ),
    paused: gauge(registry, 'choria_provisioner_paused', '1 while the provisioner is paused (standby), else 0', s),
    outcomes: counter(registry, 'choria_provisioner_outcomes', 'Provisioning attempts by outcome', [
      'site',
      'outcome',
    ] as const),
  };
}

/** What the provisioner could not take in or lost on the way: events, identities, nodes, replies. */
function lossMetrics(
  registry: Registry,
): Pick<MetricSet, 'eventErrors' | 'refusedIdentities' | 'queueFull' | 'lostReplies'> {
  const s = ['site'] as const;
  return {
    eventErrors: counter(registry, 'choria_provisioner_event_errors', 'Lifecycle events that could not be parsed', s),
    refusedIdentities: counter(
      registry,
      'choria_provisioner_refused_identities',
      'Node identities that failed the identity rule where they entered, by where they came from',
      ['site', 'source'] as const,
    ),
    queueFull: counter(registry, 'choria_provisioner_queue_full', 'Nodes dropped because the work queue was full', s),
    lostReplies: counter(
      registry,
      'choria_provisioner_lost_replies',
      'Lost replies of node-changing actions, by what watching the node then found (acted, not_acted, gone, unsure)',
      ['site', 'rpc', 'finding'] as const,
    ),
  };
}

/** Admission: identities heard but not yet known to answer, and the size of the history. */
function admissionMetrics(registry: Registry): Pick<MetricSet, 'candidates' | 'candidatesEnded' | 'historyRecords'> {
  return {
    candidates: gauge(
      registry,
      'choria_provisioner_candidates',
      'Node identities heard of that have not answered a directed discovery yet',
      ['site'] as const,
    ),
    candidatesEnded: counter(
      registry,
      'choria_provisioner_candidates_ended',
      'Candidates by how they left admission: admitted, unanswered, crowded_out (newer ones took their place)',
      ['site', 'how'] as const,
    ),
    historyRecords: gauge(registry, 'choria_provisioner_history_records', 'Node records in the history', [
      'site',
    ] as const),
  };
}

/** The leader election: labelled by election and identity instead of site. */
function electionMetrics(
  registry: Registry,
): Pick<MetricSet, 'electionCampaigns' | 'electionLeader' | 'electionInterval'> {
  return {
    electionCampaigns: counter(registry, 'choria_election_campaigns', 'Leader election campaigns', [
      'election',
      'identity',
      'state',
    ] as const),
    electionLeader: gauge(registry, 'choria_election_leader', '1 while this instance leads the election', [
      'election',
      'identity',
    ] as const),
    electionInterval: gauge(registry, 'choria_election_interval_seconds', 'Seconds until the next campaign', [
      'election',
      'identity',
    ] as const),
  };
}

/** How the instances of a site share its nodes, and the nodes held back in quarantine. */
function coordinationMetrics(
  registry: Registry,
): Pick<
  MetricSet,
  'coordinationMode' | 'coordinationMembers' | 'ownedNodes' | 'quarantined' | 'foreignNodes' | 'handedOver'
> {
  const s = ['site'] as const;
  return {
    // `identity` is the instance's Choria identity, which tells several instances of one site
    // apart (not `instance`: Prometheus sets that label itself when it scrapes)
    coordinationMode: gauge(
      registry,
      'choria_provisioner_coordination_mode',
      '1 for the coordination mode this instance runs in (none, leader_election, active_active, lock_only), else 0',
      ['site', 'identity', 'mode'] as const,
    ),
    coordinationMembers: gauge(
      registry,
      'choria_provisioner_coordination_members',
      'Live active/active members of the site this instance hears, itself included (1 in the other modes)',
      ['site', 'identity'] as const,
    ),
    ownedNodes: gauge(
      registry,
      'choria_provisioner_owned_nodes',
      "Nodes on this instance's list (queued, being provisioned, held, waiting for a lock)",
      ['site', 'identity'] as const,
    ),
    quarantined: gauge(
      registry,
      'choria_provisioner_quarantined_nodes',
      'Nodes not tried again until released or restarted (quarantine_after failed attempts in a row)',
      s,
    ),
    foreignNodes: gauge(
      registry,
      'choria_provisioner_foreign_nodes',
      'Nodes this active/active instance has seen that another member owns (0 in the other modes)',
      ['site', 'identity'] as const,
    ),
    handedOver: counter(
      registry,
      'choria_provisioner_handed_over_nodes',
      'Queued nodes moved between active/active members: given to an idle member, or taken from a busy one',
      ['site', 'identity', 'direction'] as const,
    ),
  };
}

/** The metrics of one site, bound to its `site` label value. */
export class ProvisionerMetrics implements HostMetrics {
  readonly registry: Registry;
  readonly site: string;
  readonly #m: MetricSet;

  constructor(registry: Registry, site: string) {
    this.registry = registry;
    this.site = site;
    this.#m = register(registry);
    // Upstream initialises these to zero so dashboards show a line before the first node.
    const l = { site };
    const m = this.#m;
    for (const counter of [
      m.discovered,
      m.provisioned,
      m.discoverCycles,
      m.eventDiscovered,
      m.discoveryErrors,
      m.helperErrors,
      m.helperShutdownRequests,
      m.provisionErrors,
    ])
      counter.inc(l, 0);
    for (const gauge of [m.busyWorkers, m.waitingNodes, m.workQueueEntries, m.paused]) gauge.set(l, 0);
    for (const outcome of OUTCOMES) this.#m.outcomes.inc({ site, outcome }, 0);
  }

  discoverCycle(): void {
    this.#m.discoverCycles.inc({ site: this.site });
  }
  discovered(n = 1): void {
    this.#m.discovered.inc({ site: this.site }, n);
  }
  eventDiscovered(n = 1): void {
    this.#m.eventDiscovered.inc({ site: this.site }, n);
  }
  discoveryError(): void {
    this.#m.discoveryErrors.inc({ site: this.site });
  }
  rpcTime(rpc: RpcName, seconds: number): void {
    this.#m.rpcTime.observe({ site: this.site, rpc }, seconds);
  }
  rpcError(rpc: RpcName): void {
    this.#m.rpcErrors.inc({ site: this.site, rpc });
  }
  helperTime(seconds: number): void {
    this.#m.helperTime.observe({ site: this.site }, seconds);
    this.#m.helperDuration.observe({ site: this.site }, seconds);
  }
  helperError(): void {
    this.#m.helperErrors.inc({ site: this.site });
  }
  helperShutdownRequest(): void {
    this.#m.helperShutdownRequests.inc({ site: this.site });
  }
  provisionError(): void {
    this.#m.provisionErrors.inc({ site: this.site });
  }
  provisioned(): void {
    this.#m.provisioned.inc({ site: this.site });
  }
  outcome(outcome: Outcome): void {
    this.#m.outcomes.inc({ site: this.site, outcome });
  }
  /** One attempt ended: its outcome, and the upstream success and error counters as the outcome table says. */
  attemptEnded(outcome: Outcome): void {
    const rule = OUTCOME_RULES[outcome];
    if (rule.meaning === 'success') this.provisioned();
    if (rule.provisionError) this.provisionError();
    this.outcome(outcome);
  }
  eventError(): void {
    this.#m.eventErrors.inc({ site: this.site });
  }
  /** A node identity failed the identity rule (choria/identity.ts) where it entered. */
  refusedIdentity(source: IdentitySource): void {
    this.#m.refusedIdentities.inc({ site: this.site, source });
  }
  queueFull(): void {
    this.#m.queueFull.inc({ site: this.site });
  }
  lostReply(rpc: RpcName, finding: LostReplyFinding): void {
    this.#m.lostReplies.inc({ site: this.site, rpc, finding });
  }
  setBusyWorkers(n: number): void {
    this.#m.busyWorkers.set({ site: this.site }, n);
  }
  setWaitingNodes(n: number): void {
    this.#m.waitingNodes.set({ site: this.site }, n);
  }
  setCandidates(n: number): void {
    this.#m.candidates.set({ site: this.site }, n);
  }
  candidateEnded(how: CandidateEnd, n = 1): void {
    this.#m.candidatesEnded.inc({ site: this.site, how }, n);
  }
  setHistoryRecords(n: number): void {
    this.#m.historyRecords.set({ site: this.site }, n);
  }
  setWorkQueueEntries(n: number): void {
    this.#m.workQueueEntries.set({ site: this.site }, n);
  }
  setPaused(paused: boolean): void {
    this.#m.paused.set({ site: this.site }, paused ? 1 : 0);
  }
  electionCampaign(election: string, identity: string, state: 'candidate' | 'leader'): void {
    this.#m.electionCampaigns.inc({ election, identity, state });
  }
  setElectionLeader(election: string, identity: string, leader: boolean): void {
    this.#m.electionLeader.set({ election, identity }, leader ? 1 : 0);
  }
  setElectionInterval(election: string, identity: string, seconds: number): void {
    this.#m.electionInterval.set({ election, identity }, seconds);
  }
  setCoordinationMode(identity: string, mode: EffectiveCoordination): void {
    for (const m of COORDINATION_MODES)
      this.#m.coordinationMode.set({ site: this.site, identity, mode: m }, m === mode ? 1 : 0);
  }
  setQuarantined(n: number): void {
    this.#m.quarantined.set({ site: this.site }, n);
  }
  /** active/active: `n` queued nodes given to another member or taken from one */
  renewal(event: RenewalEvent): void {
    this.#m.renewals.inc({ site: this.site, event });
  }
  setRenewals(due: number, inFlight: number, stopped: boolean): void {
    this.#m.renewalsDue.set({ site: this.site }, due);
    this.#m.renewalsInFlight.set({ site: this.site }, inFlight);
    this.#m.renewalsStopped.set({ site: this.site }, stopped ? 1 : 0);
  }
  handedOver(identity: string, direction: 'given' | 'taken', n: number): void {
    if (n > 0) this.#m.handedOver.inc({ site: this.site, identity, direction }, n);
  }
  setCoordination(identity: string, owned: number, members: number, foreign: number): void {
    const l = { site: this.site, identity };
    this.#m.ownedNodes.set(l, owned);
    this.#m.coordinationMembers.set(l, members);
    this.#m.foreignNodes.set(l, foreign);
  }
}

/** Metric names the upstream Grafana dashboard and alerts rely on. */
export const UPSTREAM_METRIC_NAMES: readonly string[] = [
  'choria_provisioner_discover_cycles',
  'choria_provisioner_discovered',
  'choria_provisioner_event_discovered',
  'choria_provisioner_discovery_errors',
  'choria_provisioner_rpc_time',
  'choria_provisioner_rpc_errors',
  'choria_provisioner_helper_time',
  'choria_provisioner_helper_errors',
  'choria_provisioner_helper_shutdown_requests',
  'choria_provisioner_provision_errors',
  'choria_provisioner_provisioned',
  'choria_provisioner_busy_workers',
  'choria_provisioner_waiting_nodes',
  'choria_provisioner_work_queue_entries',
  'choria_provisioner_paused',
];

export { Registry };

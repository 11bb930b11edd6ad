// The FleetReport: what every simulated server saw and did, as JSON.
import type { NodeLifecycleState, SimulatedNode } from './node.js';
import type { Violation, ViolationKind, ViolationLog } from './violations.js';
import type { ProtocolVersion } from './wire/types.js';

export const NODE_STATES: readonly NodeLifecycleState[] = [
  'booting',
  'waiting',
  'provisioned',
  'upgrading',
  'shutdown',
  'vanished',
  'silent',
];

export interface NodeReport {
  identity: string;
  protocol: ProtocolVersion;
  state: NodeLifecycleState;
  version: string;
  configuredCount: number;
  /** provisioning cycles after the first (reenterAfterMs) */
  cycle: number;
  /** the most configure actions carried out in one provisioning cycle */
  maxConfiguredPerCycle: number;
  restartCount: number;
  shutdownCount: number;
  updateCount: number;
  /** reprovision requests it accepted while provisioned (renewals) */
  reprovisionCount: number;
  /** how long the node has been waiting in provisioning mode (0: not waiting) */
  waitingForMs: number;
  /** the longest it waited in provisioning mode in any finished cycle */
  longestWaitMs: number;
  /** requests dispatched to an agent, keyed `agent#action` (`discovery` for discovery) */
  rpcCounts: Record<string, number>;
  configuration?: Record<string, string>;
  serverJwtClaims?: Record<string, unknown>;
  hasCertificate: boolean;
  hasPrivateKey: boolean;
  policies?: { action: string[]; opa: string[] };
  /** the first `violationLimit` violations */
  violations: Violation[];
  /** exact number of violations */
  violationCount: number;
  stats: {
    received: number;
    replies: number;
    repliesLost: number;
    dropped: number;
    filteredOut: number;
    deadlineExceeded: number;
  };
}

export interface FleetTotals {
  nodes: number;
  byState: Record<NodeLifecycleState, number>;
  /** node and fleet-wide violations */
  violations: number;
  violationsByKind: Partial<Record<ViolationKind, number>>;
  rpcCounts: Record<string, number>;
  received: number;
  replies: number;
  /** replies withheld on purpose (lostReplies, a reply hook) */
  repliesLost: number;
  dropped: number;
  deadlineExceeded: number;
  /** provisioning cycles begun after the first, over all nodes (reenterAfterMs) */
  cycles: number;
  /** the most configure actions any node carried out in one provisioning cycle */
  maxConfiguredPerCycle: number;
  /** the longest any node has been waiting in provisioning mode right now: a stuck node shows here */
  longestWaitingMs: number;
  /** the longest any node waited in provisioning mode, now or in a finished cycle */
  longestWaitMs: number;
}

export interface FleetSummary {
  name: string;
  startedAt: string;
  generatedAt: string;
  totals: FleetTotals;
  /** violations that belong to no single node (broadcasts) */
  fleetViolations: Violation[];
}

export interface FleetReport extends FleetSummary {
  nodes: NodeReport[];
}

export function nodeReport(node: SimulatedNode): NodeReport {
  const s = node.state;
  const r: NodeReport = {
    identity: node.identity,
    protocol: node.protocol,
    state: node.lifecycle,
    version: s.version,
    configuredCount: s.configuredCount,
    cycle: s.cycle,
    maxConfiguredPerCycle: s.maxConfiguredPerCycle,
    restartCount: s.restartCount,
    shutdownCount: s.shutdownCount,
    updateCount: s.updateCount,
    reprovisionCount: s.reprovisionCount,
    waitingForMs: node.waitingForMs(),
    longestWaitMs: node.longestWaitMs,
    rpcCounts: Object.fromEntries(node.stats.rpcCounts),
    hasCertificate: s.hasCertificate,
    hasPrivateKey: s.hasPrivateKey,
    violations: [...node.violations.entries],
    violationCount: node.violations.total,
    stats: {
      received: node.stats.received,
      replies: node.stats.replies,
      repliesLost: node.stats.repliesLost,
      dropped: node.stats.dropped,
      filteredOut: node.stats.filteredOut,
      deadlineExceeded: node.stats.deadlineExceeded,
    },
  };
  if (s.configuration !== undefined) r.configuration = { ...s.configuration };
  if (s.serverJwtClaims !== undefined) r.serverJwtClaims = s.serverJwtClaims;
  if (s.policies !== undefined) r.policies = { action: [...s.policies.action], opa: [...s.policies.opa] };
  return r;
}

export function fleetTotals(nodes: readonly SimulatedNode[], fleetLog: ViolationLog): FleetTotals {
  const byState = Object.fromEntries(NODE_STATES.map((st) => [st, 0])) as Record<NodeLifecycleState, number>;
  const byKind = new Map<ViolationKind, number>(fleetLog.counts);
  const rpc = new Map<string, number>();
  let violations = fleetLog.total;
  let received = 0;
  let replies = 0;
  let repliesLost = 0;
  let dropped = 0;
  let deadlineExceeded = 0;
  let cycles = 0;
  let maxConfiguredPerCycle = 0;
  let longestWaitingMs = 0;
  let longestWaitMs = 0;
  const now = Date.now();
  for (const n of nodes) {
    const waiting = n.waitingForMs(now);
    longestWaitingMs = Math.max(longestWaitingMs, waiting);
    longestWaitMs = Math.max(longestWaitMs, waiting, n.longestWaitMs);
    byState[n.lifecycle]++;
    violations += n.violations.total;
    for (const [k, c] of n.violations.counts) byKind.set(k, (byKind.get(k) ?? 0) + c);
    for (const [k, c] of n.stats.rpcCounts) rpc.set(k, (rpc.get(k) ?? 0) + c);
    received += n.stats.received;
    replies += n.stats.replies;
    repliesLost += n.stats.repliesLost;
    dropped += n.stats.dropped;
    deadlineExceeded += n.stats.deadlineExceeded;
    cycles += n.state.cycle;
    maxConfiguredPerCycle = Math.max(maxConfiguredPerCycle, n.state.maxConfiguredPerCycle);
  }
  return {
    nodes: nodes.length,
    byState,
    violations,
    violationsByKind: Object.fromEntries(byKind),
    rpcCounts: Object.fromEntries([...rpc].sort(([a], [b]) => a.localeCompare(b))),
    received,
    replies,
    repliesLost,
    dropped,
    deadlineExceeded,
    cycles,
    maxConfiguredPerCycle,
    longestWaitingMs,
    longestWaitMs,
  };
}

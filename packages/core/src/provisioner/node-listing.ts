// The nodes a site knows, as /status and /nodes show them: one line a node (HostStatus) from its
// entry on the active list and its history record, and the filtering, sorting and paging of
// /nodes (the status page's table), which describes only the page it returns.
import type { Outcome } from '../host/types.js';
import type { NodeQuery, NodeSortKey } from './queries.js';
import type { NodeHistory, NodeRecord } from './history/index.js';
import type { ActiveEntry, ActiveList, DiscoverySource } from './active-list.js';

export interface HostStatus {
  identity: string;
  state: 'queued' | 'provisioning' | 'held' | 'locked' | 'quarantined' | Outcome;
  step?: string;
  /** state `locked`: when this instance tries the node again */
  nextAttemptAt?: string;
  /** how long the node's last finished attempt took, in ms */
  lastAttemptMs?: number;
  /** failed attempts in a row (back-off and quarantine) */
  failures?: number;
  /** state quarantined: since when */
  quarantinedAt?: string;
  attempts: number;
  /** when a provisioner of the site first found the node (from the history) */
  firstSeen?: string;
  /** the provisioner instance (Choria identity) that made the last attempt */
  instance?: string;
  /** the last time a provisioner of the site provisioned, shut down or upgraded it */
  provisionedAt?: string;
  source?: DiscoverySource;
  lastError?: string;
  discoveredAt?: string;
  updatedAt: string;
}

/** One page of a site's nodes (/nodes, the status page's table). */
export interface NodePage {
  site: string;
  /** nodes that match the query */
  total: number;
  offset: number;
  limit: number;
  nodes: HostStatus[];
}

/** A node as status() and nodes() walk them: on the active list, or known from the history only. */
export interface KnownNode {
  readonly identity: string;
  readonly state: HostStatus['state'];
  readonly entry: ActiveEntry | undefined;
  readonly record: NodeRecord | undefined;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * Every node this instance knows: the active list first, in the order
 * added; then the history's others, least recently changed first.
 */
export function* knownNodes(list: ActiveList, history: NodeHistory): Generator<KnownNode> {
  const seen = new Set<string>();
  for (const e of list.entries()) {
    seen.add(e.identity);
    yield { identity: e.identity, state: e.state, entry: e, record: history.get(e.identity) };
  }
  for (const r of history.records()) {
    if (seen.has(r.identity)) continue;
    yield {
      identity: r.identity,
      state: r.quarantinedAt !== undefined ? 'quarantined' : (r.outcome ?? 'provisioning'),
      entry: undefined,
      record: r,
    };
  }
}

/** The /status view of the nodes: every one counted by state, only the first `limit` described. */
export interface DescribedNodes {
  hostCounts: Record<string, number>;
  hosts: HostStatus[];
  hostsTruncated: boolean;
}

export function describeNodes(known: Iterable<KnownNode>, limit: number, now: number): DescribedNodes {
  const hosts: HostStatus[] = [];
  const counts: Record<string, number> = {};
  let truncated = false;
  // Every host is counted; only the first `limit` are described (formatting 50,000 of them for
  // a status poll with limit 0 took longer than the poll interval).
  for (const n of known) {
    counts[n.state] = (counts[n.state] ?? 0) + 1;
    if (hosts.length < limit) hosts.push(describeNode(n, now));
    else truncated = true;
  }
  return { hostCounts: counts, hosts, hostsTruncated: truncated };
}

/** What a node's history adds to its status line. */
function pastFields(
  r: NodeRecord,
): Pick<HostStatus, 'lastError' | 'lastAttemptMs' | 'firstSeen' | 'instance' | 'provisionedAt'> {
  return {
    ...(r.error !== undefined ? { lastError: r.error } : {}),
    lastAttemptMs: r.durationMs,
    firstSeen: iso(r.firstSeen),
    instance: r.instance,
    ...(r.provisionedAt !== undefined ? { provisionedAt: iso(r.provisionedAt) } : {}),
  };
}

/** When a node of the history (not on the list) may be tried again: its back-off's end, if it is still to come. */
function nextAttempt(n: KnownNode, now: number): number | undefined {
  if (n.entry !== undefined) return n.entry.state === 'locked' ? n.entry.waitEndsAt : undefined;
  const r = n.record;
  return r !== undefined && r.quarantinedAt === undefined && r.notBefore !== undefined && r.notBefore > now
    ? r.notBefore
    : undefined;
}

type SortValue = string | number;
const compare = (a: SortValue, b: SortValue): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Orders two sort values, `sign` 1 ascending or -1 descending. A node without a value (no step,
 * no error, no next attempt) sorts after those with one in either order: sorting by last error,
 * either way round, is asked to see the errors.
 */
function compareValues(a: SortValue | undefined, b: SortValue | undefined, sign: number): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? 1 : -1;
  return sign * compare(a, b);
}

/** The value /nodes sorts by, undefined when the node has none. */
function sortKey(key: NodeSortKey, now: number): (n: KnownNode) => SortValue | undefined {
  switch (key) {
    case 'identity':
      return (n) => n.identity;
    case 'state':
      return (n) => n.state;
    case 'step':
      return (n) => n.entry?.step;
    case 'attempts':
      return (n) => n.entry?.attempts ?? n.record?.attempts ?? 0;
    case 'lastError':
      return (n) => n.record?.error;
    case 'nextAttemptAt':
      return (n) => nextAttempt(n, now);
    case 'updatedAt':
      return (n) => n.entry?.updatedAt ?? n.record?.updatedAt ?? 0;
  }
}

/** One node's status line. */
export function describeNode(n: KnownNode, now: number): HostStatus {
  const { entry: e, record: r } = n;
  if (e !== undefined) {
    return {
      identity: e.identity,
      state: e.state,
      ...(e.step !== undefined ? { step: e.step } : {}),
      ...(e.state === 'locked' && e.waitEndsAt !== undefined ? { nextAttemptAt: iso(e.waitEndsAt) } : {}),
      attempts: e.attempts,
      source: e.source,
      ...(r !== undefined ? pastFields(r) : {}),
      discoveredAt: iso(e.discoveredAt),
      updatedAt: iso(e.updatedAt),
    };
  }
  const rec = r as NodeRecord;
  const next = nextAttempt(n, now);
  return {
    identity: rec.identity,
    state: n.state,
    attempts: rec.attempts,
    ...pastFields(rec),
    ...(rec.failures > 0 ? { failures: rec.failures } : {}),
    ...(rec.quarantinedAt !== undefined ? { quarantinedAt: iso(rec.quarantinedAt) } : {}),
    ...(next !== undefined ? { nextAttemptAt: iso(next) } : {}),
    updatedAt: iso(rec.updatedAt),
  };
}

/**
 * One page of this site's nodes, filtered by state and identity, sorted (ties by identity):
 * only the page is described, so paging through 100,000 nodes stays cheap.
 */
export function pageOf(
  known: Iterable<KnownNode>,
  query: Omit<NodeQuery, 'site'>,
  site: string,
  now: number,
): NodePage {
  const search = query.search?.toLowerCase();
  const matching: KnownNode[] = [];
  for (const n of known) {
    if (query.state !== undefined && n.state !== query.state) continue;
    if (search !== undefined && !n.identity.toLowerCase().includes(search)) continue;
    matching.push(n);
  }
  const key = sortKey(query.sort, now);
  const sign = query.order === 'desc' ? -1 : 1;
  const keyed = matching.map((n) => ({ n, k: key(n) }));
  keyed.sort((a, b) => compareValues(a.k, b.k, sign) || sign * compare(a.n.identity, b.n.identity));
  return {
    site,
    total: keyed.length,
    offset: query.offset,
    limit: query.limit,
    nodes: keyed.slice(query.offset, query.offset + query.limit).map(({ n }) => describeNode(n, now)),
  };
}

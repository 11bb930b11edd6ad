// What can be asked of a site: a status snapshot, a page of its nodes, a control action. The
// provisioner answers these; the monitor port (monitor/) parses them from HTTP requests.

/** What /status was asked for. */
export interface StatusQuery {
  /** describe at most this many nodes a site (every node is still counted) */
  readonly limit?: number;
  /** the bearer token presented, if any (never logged): a site with monitor_api_token lists its nodes only to it */
  readonly token?: string;
}

export const NODE_SORT_KEYS = [
  'identity',
  'state',
  'step',
  'attempts',
  'lastError',
  'nextAttemptAt',
  'updatedAt',
] as const;
export type NodeSortKey = (typeof NODE_SORT_KEYS)[number];

/** The most nodes one page describes. */
export const MAX_NODE_PAGE = 500;

/** A filtered, searched, sorted page of one site's nodes. */
export interface NodeQuery {
  /** the site (default: the first) */
  readonly site?: string;
  /** only nodes in this state */
  readonly state?: string;
  /** only nodes whose identity contains this (case-insensitive) */
  readonly search?: string;
  readonly sort: NodeSortKey;
  readonly order: 'asc' | 'desc';
  readonly offset: number;
  /** 1 to MAX_NODE_PAGE */
  readonly limit: number;
  /** the bearer token presented, if any (never logged): a site with monitor_api_token lists its nodes only to it */
  readonly token?: string;
}

export type ControlAction = 'pause' | 'resume' | 'resume-renewals' | 'release' | 'retry';

/** A control request as an operator made it. */
export interface ControlRequest {
  readonly action: ControlAction;
  /** release and retry: the node */
  readonly identity?: string;
  /** only this site */
  readonly site?: string;
  /** the bearer token presented, if any (never logged) */
  readonly token?: string;
}

// The broker link as the client reports it, and when silence seen on it can say anything about a
// node. After a broker outage the provisioner is back first; the servers in provisioning mode
// reconnect on their own schedule, so for FLEET_RECONNECT_MS after the link returns a node that
// does not answer may simply not be back yet. Every decision that reads silence (the lost-reply
// watch, the liveness check, the quick tries, the ping before a change, rediscovery) uses this one
// setting.

/** After the link comes back, how long the servers are given to reconnect too. */
export const FLEET_RECONNECT_MS = 5_000;

/** The broker link as ChoriaClient.link reports it. */
export interface LinkState {
  readonly up: boolean;
  /** drops and returns since the client started */
  readonly changes: number;
  /** when it last came up (performance.now()) */
  readonly upSince: number;
}

/**
 * Whether silence seen between `before` and `after` (taken at `at`) can say anything about a node:
 * the link stayed up, and either it never dropped or it came back long enough ago for the servers
 * to be on it again.
 */
export function linkSettled(before: LinkState, after: LinkState, fleetReconnectMs: number, at = performance.now()): boolean {
  if (!before.up || !after.up || after.changes !== before.changes) return false;
  return after.changes === 0 || at - after.upSince >= fleetReconnectMs;
}

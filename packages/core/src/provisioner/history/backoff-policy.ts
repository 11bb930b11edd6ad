// How long a failing node waits before its next attempt: doubling from `retry_backoff` to
// `retry_backoff_max`, jittered so a batch that failed together does not come back together, and
// quarantined (not tried at all) after `quarantine_after` failures in a row.

export interface SetbackPolicy {
  /** first back-off in ms; 0: retry as upstream does (the next discovery or event) */
  readonly backoffMs: number;
  readonly backoffMaxMs: number;
  /** failed attempts in a row before quarantine; 0: never */
  readonly quarantineAfter: number;
  /** [0, 1) source for the jitter */
  readonly random?: () => number;
}

/** The back-off after the `failures`-th failure in a row: base × 2^(failures−1), capped, × [0.5, 1). */
export function backoffAfter(failures: number, policy: SetbackPolicy): number {
  if (policy.backoffMs <= 0 || failures < 1) return 0;
  const full = Math.min(policy.backoffMaxMs, policy.backoffMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(full * (0.5 + (policy.random ?? Math.random)() / 2));
}

export function quarantines(failures: number, policy: SetbackPolicy): boolean {
  return policy.quarantineAfter > 0 && failures >= policy.quarantineAfter;
}

// Bucket TTL checks of the election: TTL >= 1 s, TTL <= 1 h, campaign interval
// (0.75 x TTL) >= 1 s and at least 1 s shorter than the TTL; together 4 s <= TTL <= 1 h.
import { formatMs } from '../../util/duration.js';

export const ELECTION_TTL_MIN_MS = 4_000;
export const ELECTION_TTL_MAX_MS = 3_600_000;

/** The nominal campaign interval upstream derives from the TTL; only validated, never used for timing. */
export function campaignIntervalMs(ttlMs: number): number {
  return ttlMs * 0.75;
}

/** Why a bucket TTL cannot be used for an election, or undefined when it is fine. */
export function electionTtlProblem(ttlMs: number): string | undefined {
  const need =
    `the election needs ${formatMs(ELECTION_TTL_MIN_MS)} <= TTL <= ${formatMs(ELECTION_TTL_MAX_MS)} ` +
    `(broker setting plugin.choria.network.stream.leader_election_ttl)`;
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) return `bucket TTL is not set (max_age 0 keeps keys forever); ${need}`;
  if (ttlMs < 1_000) return `bucket TTL ${formatMs(ttlMs)} is below 1 s; ${need}`;
  if (ttlMs > ELECTION_TTL_MAX_MS) return `bucket TTL ${formatMs(ttlMs)} is above 1 h; ${need}`;
  const interval = campaignIntervalMs(ttlMs);
  if (interval < 1_000)
    return `campaign interval ${formatMs(interval)} (0.75 x TTL ${formatMs(ttlMs)}) is below 1 s; ${need}`;
  if (ttlMs - interval < 1_000) {
    return (
      `campaign interval ${formatMs(interval)} (0.75 x TTL) is less than 1 s shorter than the bucket TTL ` +
      `${formatMs(ttlMs)}; ${need}`
    );
  }
  return undefined;
}

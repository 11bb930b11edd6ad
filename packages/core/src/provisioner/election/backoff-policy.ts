// Private copy of go-choria's back-off policy math (security.md §9) so the election does not depend on
// util/backoff.ts. Only the two policies the election uses: Default (bucket-status retries) and
// TwentySec (campaign interval).

/** A policy is a list of millisecond steps; step n uses the entry min(n, length - 1). */
export type BackoffSteps = readonly number[];

/** go-choria `backoff.Default` (= FiveSec). */
export const DEFAULT_STEPS: BackoffSteps = Object.freeze([500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000]);

/** go-choria `backoff.TwentySec` (44 steps). */
export const TWENTY_SEC_STEPS: BackoffSteps = Object.freeze([
  500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5500, 5750, 6000, 6500, 7000, 7500, 8000, 8500, 9000,
  9500, 10000, 10500, 10750, 11000, 11500, 12000, 12500, 13000, 13500, 14000, 14500, 15000, 15500, 15750, 16000, 16500,
  17000, 17500, 18000, 18500, 19000, 19500, 20000,
]);

/**
 * Wait before attempt/campaign n: with m = steps[min(n, len - 1)], 0 if m is 0, else an integer drawn
 * uniformly from [floor(m/2), floor(m/2) + m - 1]. `random` returns a number in [0, 1).
 */
export function stepDelayMs(steps: BackoffSteps, n: number, random: () => number = Math.random): number {
  if (steps.length === 0) return 0;
  const index = Math.min(Math.max(0, Math.floor(n)), steps.length - 1);
  const m = steps[index] ?? 0;
  if (m <= 0) return 0;
  // clamp so a random source that returns exactly 1 (or garbage) still stays inside the range
  const drawn = random();
  const r = Number.isFinite(drawn) ? drawn : 0;
  const jitter = Math.min(m - 1, Math.max(0, Math.floor(r * m)));
  return Math.floor(m / 2) + jitter;
}

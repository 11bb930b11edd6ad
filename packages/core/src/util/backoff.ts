// go-choria back-off policies and an abortable sleep.

/** A back-off policy: the base wait in milliseconds for attempt n = 0, 1, 2, … (the last entry repeats). */
export interface BackoffPolicy {
  readonly name: string;
  readonly millis: readonly number[];
}

export const FIVE_SEC: BackoffPolicy = Object.freeze({
  name: 'FiveSec',
  millis: Object.freeze([500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000]),
});

/** go-choria's `backoff.Default`. */
export const DEFAULT_BACKOFF: BackoffPolicy = FIVE_SEC;

export const TWENTY_SEC: BackoffPolicy = Object.freeze({
  name: 'TwentySec',
  millis: Object.freeze([
    500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5500, 5750, 6000, 6500, 7000, 7500, 8000, 8500,
    9000, 9500, 10000, 10500, 10750, 11000, 11500, 12000, 12500, 13000, 13500, 14000, 14500, 15000, 15500, 15750, 16000,
    16500, 17000, 17500, 18000, 18500, 19000, 19500, 20000,
  ]),
});

export const FIVE_SEC_START_GRACE: BackoffPolicy = Object.freeze({
  name: 'FiveSecStartGrace',
  millis: Object.freeze([
    0, 25, 50, 75, 100, 125, 150, 200, 250, 500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000,
  ]),
});

/**
 * The wait before retry `n` in milliseconds: with `m = millis[min(n, last)]`, 0 when `m` is 0, else an
 * integer uniformly drawn from `[floor(m/2), floor(m/2) + m - 1]`. `random` returns values in [0, 1).
 */
export function backoffDelay(policy: BackoffPolicy, n: number, random: () => number = Math.random): number {
  const steps = policy.millis;
  if (steps.length === 0) return 0;
  const index = Math.min(Math.max(0, Math.floor(n)), steps.length - 1);
  const m = steps[index] ?? 0;
  if (m <= 0) return 0;
  // clamped, so a random source that returns exactly 1 (or garbage) still stays inside the range
  const drawn = random();
  const r = Number.isFinite(drawn) ? drawn : 0;
  const jitter = Math.min(m - 1, Math.max(0, Math.floor(r * m)));
  return Math.floor(m / 2) + jitter;
}

/** Resolves after `ms` milliseconds; rejects with the signal's reason as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new Error('aborted');
}

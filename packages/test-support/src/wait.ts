// Waiting in tests: one sleep and one poll loop for every package's tests.

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface UntilOptions {
  /** how often the condition is checked (default 25 ms) */
  readonly stepMs?: number;
  /** run between checks, e.g. a discovery that makes progress */
  readonly tick?: () => unknown;
}

/**
 * Checks `cond` until it holds; throws `timed out after <ms> ms waiting for <what>` once
 * `timeoutMs` have passed. Returns the milliseconds waited.
 */
export async function until(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  opts: UntilOptions = {},
): Promise<number> {
  const started = Date.now();
  while (!(await cond())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await opts.tick?.();
    await sleep(opts.stepMs ?? 25);
  }
  return Date.now() - started;
}

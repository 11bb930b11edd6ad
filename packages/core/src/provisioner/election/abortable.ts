// Abort-aware waiting for the election loop: stop() must end every pending wait at once and leave no
// timer of ours behind.

/** Returned by untilAborted when the signal fired first. */
export const ABORTED: unique symbol = Symbol('aborted');

/** Resolves true after ms, or false as soon as the signal aborts (clearing the timer). */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve(false);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      },
      Math.max(0, ms),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Settles like `work`, or with ABORTED as soon as the signal aborts. Used for NATS requests, which the
 * nats 2.x client cannot cancel: an abandoned request still settles later (its rejection is handled
 * here) and its result is ignored.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => resolve(ABORTED);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

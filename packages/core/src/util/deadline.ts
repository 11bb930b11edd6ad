// Waiting a bounded time for work that should end soon: a stop must finish even when one of its
// steps never does (a broker that does not answer, a child that does not exit).

/**
 * Waits for `work` to settle, at most `ms`. True when it settled in time (a rejection counts: the
 * caller decides what a failure means); false when the time ran out, and `work` goes on unwatched.
 */
export async function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([
      work.then(
        () => true,
        () => true,
      ),
      expired,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

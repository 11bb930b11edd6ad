// A time limit that looks at the I/O that came in before it gives up.
//
// Node runs the timers that came due before it polls for I/O. When this process's event loop was
// busy past a limit (a burst of work, a long GC pause), a plain timer fires before the answer
// that arrived in time is read, and a helper or node that was on time is called late. This timer
// only says "look now": its callback waits for setImmediate, which runs after the loop's next
// poll phase, so whatever arrived meanwhile is handled first and can cancel it. (The helper
// spawner, spawner-runner.ts, applies the same rule in its own code: it imports nothing
// of the library, to start fast.)

/** A pending limit; cancel() stops it, also between the timer firing and the look. */
export interface IoTimer {
  cancel(): void;
}

/** Calls `onExpired` about `ms` from now, after the I/O that has arrived by then is read. */
export function afterPendingIo(ms: number, onExpired: () => void): IoTimer {
  let look: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    look = setImmediate(onExpired);
  }, ms);
  return {
    cancel: () => {
      clearTimeout(timer);
      if (look !== undefined) clearImmediate(look);
    },
  };
}

// Blocking this process's event loop in tests, as a provisioner busy with other work would block
// it. Atomics.wait stops the thread without using the CPU: the processes the test waits for (the
// helpers, the broker) keep the cores, also on a loaded 2-core machine.

/** Blocks the event loop now, for `ms`. */
export function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Blocks the event loop for `ms` from its last phase (setImmediate). Its next turn then starts with
 * the timers that came due meanwhile, before the I/O that arrived is read: the order in which a
 * time limit could take an answer that came in time for a timeout. (Blocked from a timer instead,
 * the loop would poll for I/O before it looks at the timers again.)
 */
export function blockEventLoopFromCheckPhase(ms: number): Promise<void> {
  return new Promise((resolve) =>
    setImmediate(() => {
      blockEventLoop(ms);
      resolve();
    }),
  );
}

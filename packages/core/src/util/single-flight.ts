// A task that runs at most once at a time: a call while it runs waits for the running one and
// gets its result, instead of starting a second.

export function singleFlight<T>(task: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | undefined;
  return () => {
    running ??= task().finally(() => {
      running = undefined;
    });
    return running;
  };
}

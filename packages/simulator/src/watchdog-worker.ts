// The watching half of watchdog.ts, run in a worker thread.
import { readFileSync, readdirSync, writeSync } from 'node:fs';
import { workerData } from 'node:worker_threads';

/** The memory both threads share. */
export interface WatchdogShared {
  /** Date.now() of the main thread's last beat */
  readonly beat: BigInt64Array;
  /** bytes of `doing` in use */
  readonly doingLength: Int32Array;
  /** UTF-8: what the main thread said it is doing */
  readonly doing: Uint8Array;
}

interface WorkerData {
  readonly shared: WatchdogShared;
  readonly name: string;
  readonly limitMs: number;
  readonly pid: number;
}

/** The live descendants of `root` from /proc (Linux), deepest last. */
function descendants(root: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // it ended while we looked
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const [pid, ppid] of parents) {
      if (ppid === parent) {
        out.push(pid);
        queue.push(pid);
      }
    }
  }
  return out;
}

const { shared, name, limitMs, pid } = workerData as WorkerData;

setInterval(
  () => {
    const stalledMs = Date.now() - Number(Atomics.load(shared.beat, 0));
    if (stalledMs <= limitMs) return;
    const doing = new TextDecoder().decode(shared.doing.subarray(0, Atomics.load(shared.doingLength, 0)));
    const children = descendants(pid);
    writeSync(
      2,
      `${name}: watchdog: the event loop has not turned for ${(stalledMs / 1000).toFixed(1)} s ` +
        `(limit ${(limitMs / 1000).toFixed(1)} s)${doing === '' ? '' : `, while ${doing}`}; ` +
        `stopping pid ${pid}${children.length > 0 ? ` and its ${children.length} child processes` : ''}` +
        ' instead of hanging. This is a bug: please report it with this message.\n',
    );
    for (const child of children) {
      try {
        process.kill(child, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    process.kill(pid, 'SIGKILL');
  },
  Math.min(1000, Math.max(10, limitMs / 10)),
);

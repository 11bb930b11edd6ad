// A guard against a process that stops turning its event loop (a deadlock inside Node or OpenSSL, a
// runaway synchronous loop): a worker thread watches a heartbeat the main thread writes into shared
// memory. When the heartbeat is older than the limit, the worker prints what the process was doing,
// ends its child processes (a demo's nats-server and helpers) and then the process itself, with
// SIGKILL, since a stuck main thread runs no signal handler. Exit status: 137.
// The worker is a separate module: a stuck main thread cannot run a watchdog of its own.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { WatchdogShared } from './watchdog-worker.js';

export interface WatchdogOptions {
  /** what to call the process in the message, e.g. `choria-provisioner demo` */
  readonly name: string;
  /** how long the event loop may stand still (ms) */
  readonly limitMs: number;
  /** how often the main thread beats (default: a tenth of the limit, at most 1 s) */
  readonly beatMs?: number;
}

export interface Watchdog {
  /** says what the process is doing now; the message names the last thing said */
  doing(what: string): void;
  stop(): Promise<void>;
}

const DOING_BYTES = 512;

/** The compiled worker: beside this module in dist/, or in dist/ when this runs from src/ (tests). */
function workerFile(): string {
  const candidates = [
    new URL('./watchdog-worker.js', import.meta.url),
    new URL('../dist/watchdog-worker.js', import.meta.url),
  ].map((u) => fileURLToPath(u));
  const found = candidates.find((f) => existsSync(f));
  if (found === undefined)
    throw new Error(
      `the watchdog worker is missing (looked for ${candidates.join(', ')}); build the simulator package`,
    );
  return found;
}

export function startWatchdog(opts: WatchdogOptions): Watchdog {
  if (!(opts.limitMs > 0)) throw new Error(`watchdog limit must be positive, got ${opts.limitMs} ms`);
  const shared: WatchdogShared = {
    beat: new BigInt64Array(new SharedArrayBuffer(8)),
    doingLength: new Int32Array(new SharedArrayBuffer(4)),
    doing: new Uint8Array(new SharedArrayBuffer(DOING_BYTES)),
  };
  const beat = (): void => {
    Atomics.store(shared.beat, 0, BigInt(Date.now()));
  };
  beat();
  const worker = new Worker(workerFile(), {
    workerData: { shared, name: opts.name, limitMs: opts.limitMs, pid: process.pid },
  });
  worker.unref();
  const timer = setInterval(beat, opts.beatMs ?? Math.min(1000, Math.max(10, opts.limitMs / 10)));
  timer.unref();
  const encoder = new TextEncoder();
  return {
    doing(what: string): void {
      const { written } = encoder.encodeInto(what, shared.doing);
      Atomics.store(shared.doingLength, 0, written);
    },
    async stop(): Promise<void> {
      clearInterval(timer);
      await worker.terminate();
    },
  };
}

/** `--watchdog <seconds>`: 0 turns it off. */
export const DEFAULT_WATCHDOG_S = 30;

// What a demo run is asked for (`choria-provisioner demo` options and test settings).
import { availableParallelism } from 'node:os';
import type { ProcessGuard } from '../process-guard.js';
import type { DemoMode } from './keys.js';
import type { TerminalSink } from './progress.js';

export interface DemoSettings {
  readonly mode: DemoMode;
  readonly nodes: number;
  /** short-lived credentials, renewed once after every node is provisioned (modes ed25519 and pki) */
  readonly renew?: boolean;
  /** provisioner workers; default 4 x CPU count */
  readonly workers?: number | undefined;
  readonly debug: boolean;
  /** where NATS_SERVER_BIN and PATH are read (default process.env) */
  readonly env?: NodeJS.ProcessEnv;
  /** a terminal for the live progress line; plain lines every 2 s without one */
  readonly terminal?: TerminalSink | undefined;
  /** where the children are registered for an uncaught error (bin.ts passes the process's) */
  guard?: ProcessGuard;
  /** stop cleanly on SIGHUP/SIGINT/SIGTERM (default true) */
  readonly handleSignals?: boolean;
  /** give up after this long (default 120 s + 0.2 s per node) */
  readonly deadlineMs?: number;
  /** seconds the event loop may stand still before the watchdog ends the demo (default 30; 0: off) */
  readonly watchdogS?: number;
}

export function defaultWorkers(): number {
  return 4 * availableParallelism();
}

export function defaultDeadlineMs(nodes: number): number {
  return 120_000 + 200 * nodes;
}

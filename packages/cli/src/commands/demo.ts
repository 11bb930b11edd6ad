// `choria-provisioner demo`: a private broker, a simulated fleet and a provisioner, provisioned end
// to end with progress and a summary (see ../demo/run-demo.ts).
import { EXIT, processIO, type CliIO } from '../io.js';
import { runDemo } from '../demo/run-demo.js';
import type { DemoSettings } from '../demo/settings.js';
import type { DemoMode } from '../demo/keys.js';
import { RENEWABLE_MODES } from '../demo/renewal.js';

export interface DemoOptions {
  mode: DemoMode;
  nodes: number;
  /** renew every node's short-lived credentials once (ed25519 and pki) */
  renew?: boolean;
  workers: number | undefined;
  debug: boolean;
  /** seconds; 0 turns the watchdog off */
  watchdogS?: number;
}

const MAX_NODES = 100_000;
const MAX_WORKERS = 1_000;

export async function demoCommand(opts: DemoOptions, io: CliIO, extra: Partial<DemoSettings> = {}): Promise<number> {
  if (!Number.isInteger(opts.nodes) || opts.nodes < 1 || opts.nodes > MAX_NODES) {
    io.err(
      `choria-provisioner: --nodes must be a whole number from 1 to ${MAX_NODES}, got ${opts.nodes}\n` +
        `Run with --help for usage.`,
    );
    return EXIT.usage;
  }
  if (
    opts.workers !== undefined &&
    (!Number.isInteger(opts.workers) || opts.workers < 1 || opts.workers > MAX_WORKERS)
  ) {
    io.err(
      `choria-provisioner: --workers must be a whole number from 1 to ${MAX_WORKERS}, got ${opts.workers}\n` +
        `Run with --help for usage.`,
    );
    return EXIT.usage;
  }
  if (opts.watchdogS !== undefined && !(Number.isFinite(opts.watchdogS) && opts.watchdogS >= 0)) {
    io.err(
      `choria-provisioner: --watchdog must be 0 (off) or a number of seconds, got ${opts.watchdogS}\n` +
        `Run with --help for usage.`,
    );
    return EXIT.usage;
  }
  if (opts.renew === true && !RENEWABLE_MODES.includes(opts.mode)) {
    io.err(
      `choria-provisioner: --renew needs a mode whose servers are given credentials that expire ` +
        `(${RENEWABLE_MODES.join(' or ')}), not ${opts.mode}\nRun with --help for usage.`,
    );
    return EXIT.usage;
  }
  // The live line needs a real terminal; with --debug the log lines would tear it apart.
  const terminal = io === processIO && process.stdout.isTTY && !opts.debug ? process.stdout : undefined;
  return await runDemo(
    {
      mode: opts.mode,
      nodes: opts.nodes,
      renew: opts.renew === true,
      workers: opts.workers,
      debug: opts.debug,
      terminal,
      ...(opts.watchdogS !== undefined ? { watchdogS: opts.watchdogS } : {}),
      ...extra,
    },
    io,
  );
}

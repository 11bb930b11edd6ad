// The process-wide end of a command: which signals stop it, and what must still happen when it
// dies of an uncaught error. Node runs no 'exit' listener and no cleanup after an uncaught
// exception, so children (the demo's nats-server, pool helpers) would outlive it: every command
// that starts children registers a synchronous last resort here.
import type { CliIO } from './io.js';

/** Signals that stop a command cleanly. SIGHUP is what closing its terminal sends. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGHUP', 'SIGINT', 'SIGTERM'];

/** Exit status after an uncaught error (README "Exit codes": runtime failure). */
const FATAL_EXIT = 3;

export class ProcessGuard {
  readonly #lastResorts = new Set<() => void>();
  #installed = false;

  /** Registers a synchronous cleanup for a fatal error; returns its remover. */
  onFatal(fn: () => void): () => void {
    this.#lastResorts.add(fn);
    return () => this.#lastResorts.delete(fn);
  }

  /** Runs every registered last resort once (each failure is ignored: the next still runs). */
  runLastResorts(): void {
    for (const fn of [...this.#lastResorts]) {
      this.#lastResorts.delete(fn);
      try {
        fn();
      } catch {
        // nothing more can be done for this one
      }
    }
  }

  /** Makes uncaught errors and unhandled rejections print, run the last resorts and exit 3. */
  install(io: CliIO, name: string): void {
    if (this.#installed) return;
    this.#installed = true;
    const fatal = (what: string, err: unknown): void => {
      const text = err instanceof Error ? (err.stack ?? err.message) : String(err);
      io.err(`${name}: ${what}, stopping: ${text}`);
      this.runLastResorts();
      process.exit(FATAL_EXIT);
    };
    process.on('uncaughtException', (err) => fatal('unexpected error', err));
    process.on('unhandledRejection', (reason) => fatal('unhandled promise rejection', reason));
    // A reader that went away (`choria-provisioner validate ... | head -1`) is not a failure of the
    // command: what is left to print is dropped, as a Unix filter does, and the command ends with
    // its own status. Any other write error on the terminal's streams is.
    for (const stream of [process.stdout, process.stderr]) {
      stream.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EPIPE') fatal(`cannot write to ${stream === process.stdout ? 'stdout' : 'stderr'}`, err);
      });
    }
  }
}

/** Resolves with the first stop signal; dispose() removes the handlers (and the default dies with them). */
export function waitForStopSignal(): { readonly signal: Promise<NodeJS.Signals>; dispose(): void } {
  let onSignal: (sig: NodeJS.Signals) => void = () => undefined;
  const dispose = (): void => {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  };
  const signal = new Promise<NodeJS.Signals>((resolve) => {
    onSignal = (sig) => {
      dispose();
      resolve(sig);
    };
    for (const s of STOP_SIGNALS) process.on(s, onSignal);
  });
  return { signal, dispose };
}

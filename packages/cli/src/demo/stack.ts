// What the demo starts, as one disposable stack: every part is registered with what stops it, and
// stop() stops them last-started-first (the fleet before the provisioner, the broker last), going
// on past a part that fails to stop.
import type { CliIO } from '../io.js';

export class DemoStack {
  readonly #io: CliIO;
  readonly #parts: { what: string; stop: () => Promise<void> | void }[] = [];

  constructor(io: CliIO) {
    this.#io = io;
  }

  /** Registers a started part; `what` names it in the error when it cannot be stopped. */
  defer(what: string, stop: () => Promise<void> | void): void {
    this.#parts.push({ what, stop });
  }

  /** Stops every part registered so far; safe to call again. */
  async stop(): Promise<void> {
    for (const part of this.#parts.splice(0).reverse()) {
      try {
        await part.stop();
      } catch (err) {
        this.#io.err(
          `choria-provisioner demo: could not stop ${part.what}: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
  }
}

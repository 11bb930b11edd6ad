// A signal (SIGHUP, SIGINT, SIGTERM) ends the demo cleanly: it ends the wait, or the start-up step
// under way, and the stack then stops everything in order.
import { STOP_SIGNALS } from '../process-guard.js';
import type { DemoStack } from './stack.js';

export class Interruption {
  readonly #abort = new AbortController();
  readonly #interrupted: Promise<never>;

  /** `handleSignals`: listen to the stop signals (the listeners go with the stack). */
  constructor(stack: DemoStack, handleSignals: boolean) {
    this.#interrupted = new Promise<never>((_, reject) => {
      this.#abort.signal.addEventListener('abort', () => reject(this.#abort.signal.reason as Error), { once: true });
    });
    this.#interrupted.catch(() => undefined);
    if (!handleSignals) return;
    const onSignal = (signal: NodeJS.Signals): void => this.#abort.abort(new Error(`interrupted by ${signal}`));
    for (const s of STOP_SIGNALS) process.on(s, onSignal);
    stack.defer('the signal handlers', () => {
      for (const s of STOP_SIGNALS) process.off(s, onSignal);
    });
  }

  get happened(): boolean {
    return this.#abort.signal.aborted;
  }

  /** What interrupted the demo (only once it happened). */
  get reason(): string {
    const r: unknown = this.#abort.signal.reason;
    return r instanceof Error ? r.message : String(r);
  }

  /** Waits for `work` unless a signal comes first (then rejects with it). */
  async race<T>(work: Promise<T>): Promise<T> {
    return await Promise.race([work, this.#interrupted]);
  }

  /**
   * Waits for a start-up step unless a signal comes first; what
   * it started after the signal is stopped again with `stopLate`.
   */
  async starting<T>(step: Promise<T>, stopLate: (started: T) => Promise<void>): Promise<T> {
    try {
      return await this.race(step);
    } catch (err) {
      if (this.happened) step.then(stopLate, () => undefined).catch(() => undefined);
      throw err;
    }
  }
}

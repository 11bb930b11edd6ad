// The log's budget for warnings a stranger can cause. Anything holding the provisioning login can
// send refused identities, replies to requests never sent or from another sender, and failing
// replies as fast as the broker carries them; one line each would grow the log at that speed. So
// each kind of such warning is written LOG_BUDGET_PER_WINDOW times per LOG_BUDGET_WINDOW_MS, and
// what was left out is summed up in one line at the end of the window ("12345 more refused
// identities in the last 10 s"). Kinds, not texts, are counted: varying a text buys nothing.
import type { Logger } from './logger.js';

export const LOG_BUDGET_PER_WINDOW = 5;
export const LOG_BUDGET_WINDOW_MS = 10_000;

/** The kinds of warning a stranger can cause, and how a summary names them. */
const KINDS = {
  'refused-identity': 'refused identities',
  'stray-reply': 'replies to requests this instance did not send or no longer waits for',
  'unexpected-reply': 'replies from a sender the request was not for',
  'undecodable-reply': 'undecodable replies',
  'refused-event': 'refused lifecycle events',
  'node-failure': 'node failures',
} as const;

export type LogKind = keyof typeof KINDS;

interface Window {
  written: number;
  skipped: number;
  timer: NodeJS.Timeout;
}

export interface LogBudgetOptions {
  readonly perWindow?: number;
  readonly windowMs?: number;
}

/** Writes warnings of each kind within its budget; owned by whoever owns the logger's use (no module state). */
export class LogBudget {
  readonly #logger: Logger;
  readonly #perWindow: number;
  readonly #windowMs: number;
  readonly #windows = new Map<LogKind, Window>();

  constructor(logger: Logger, opts: LogBudgetOptions = {}) {
    this.#logger = logger;
    this.#perWindow = opts.perWindow ?? LOG_BUDGET_PER_WINDOW;
    this.#windowMs = opts.windowMs ?? LOG_BUDGET_WINDOW_MS;
  }

  /** Writes `message` as a warning unless `kind` has had its share of this window (then it is counted). */
  warn(kind: LogKind, message: string, meta?: Record<string, unknown>): void {
    if (this.#take(kind)) this.#logger.warn(message, meta);
  }

  /** error() within the same budget. */
  error(kind: LogKind, message: string, meta?: Record<string, unknown>): void {
    if (this.#take(kind)) this.#logger.error(message, meta);
  }

  /**
   * Whether a warning of `kind` may be written now (counted as written; when not, as left out):
   * for a caller that writes with its own logger.
   */
  allows(kind: LogKind): boolean {
    return this.#take(kind);
  }

  /** Writes the sums of the open windows now and forgets them (a stop). */
  flush(): void {
    for (const kind of [...this.#windows.keys()]) this.#close(kind);
  }

  #take(kind: LogKind): boolean {
    let window = this.#windows.get(kind);
    if (window === undefined) {
      const timer = setTimeout(() => this.#close(kind), this.#windowMs);
      timer.unref();
      window = { written: 0, skipped: 0, timer };
      this.#windows.set(kind, window);
    }
    if (window.written < this.#perWindow) {
      window.written++;
      return true;
    }
    window.skipped++;
    return false;
  }

  #close(kind: LogKind): void {
    const window = this.#windows.get(kind);
    if (window === undefined) return;
    clearTimeout(window.timer);
    this.#windows.delete(kind);
    if (window.skipped > 0) {
      const seconds = Math.round(this.#windowMs / 1000);
      this.#logger.warn(`${window.skipped} more ${KINDS[kind]} in the last ${seconds} s (not each written)`);
    }
  }
}

// Whether the connection's path to the broker has gone silent while it claims to be up: requests
// keep timing out and nothing at all comes in on the connection meanwhile (no reply, no event, no
// other message). Pings find such a path within seconds (connector.ts); this catches what pings
// alone would miss, a path that still carries pings but no messages, and decides after a burst
// rather than a whole ping cycle when the requests' own timeouts are short.

/** How many requests in a row must time out with nothing received before the path is taken as dead. */
export const SILENT_TIMEOUTS = 3;

export class SilentPathDetector {
  readonly #threshold: number;
  #silentInARow = 0;

  constructor(threshold = SILENT_TIMEOUTS) {
    this.#threshold = threshold;
  }

  /**
   * A request timed out. `receivedMeanwhile`: messages the connection received while it waited.
   * Returns true when this makes `threshold` silent timeouts in a row (and starts counting again).
   */
  timedOut(receivedMeanwhile: number): boolean {
    if (receivedMeanwhile > 0) {
      this.#silentInARow = 0;
      return false;
    }
    this.#silentInARow++;
    if (this.#silentInARow < this.#threshold) return false;
    this.#silentInARow = 0;
    return true;
  }

  /** Something came in: the path carries messages. */
  heard(): void {
    this.#silentInARow = 0;
  }
}

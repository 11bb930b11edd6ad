// Whether the connection's path to the broker has gone silent while it claims to be up: requests
// keep timing out and nothing at all comes in on the connection meanwhile (no reply, no event, no
// other message). Pings find such a path within seconds (connector.ts); after such a burst the
// client asks the broker for one round trip at once (client.ts), rather than waiting for the ping
// cycle, and replaces the connection only when that goes unanswered too.

/** How many requests in a row must time out with nothing received before the path is checked. */
export const SILENT_TIMEOUTS = 3;
/**
 * How long the broker gets to answer the ping that checks the path (nodes that vanished also time
 * out with nothing received; a broker that answers says the path is fine).
 */
export const PATH_PROBE_MS = 1_000;

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

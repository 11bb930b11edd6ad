// A broker link frozen in one state, for tests whose fake client needs `link` (choria/link.ts).
import { BrokerLink, FLEET_RECONNECT_MS, linkSettled, type LinkState } from '../../../src/choria/link.js';

/** A link whose state is `state()` (a function, so a test can change it), settled by the real rule. */
export function fixedLink(state: () => LinkState, fleetReconnectMs = FLEET_RECONNECT_MS): BrokerLink {
  const link = {
    fleetReconnectMs,
    get state() {
      return state();
    },
    settledSince: (before: LinkState, at = performance.now()) => linkSettled(before, state(), fleetReconnectMs, at),
    get settled() {
      return linkSettled(state(), state(), fleetReconnectMs);
    },
    onRestored: () => () => undefined,
  };
  return link as unknown as BrokerLink;
}

// After a broker outage the servers reconnect one by one, each on its own back-off. A request
// that changes a node (configure, restart, shutdown, release_update), published before its target
// is back, reaches nobody: it waits out its whole timeout (22 s) and then the lost-reply watch,
// although the node may have been back a second later. Read-only steps already retry quickly in
// that window (read-step.ts); a node-changing request cannot simply be sent twice. So while the
// link is unsettled, the node is pinged first (rpcutil#ping, short tries, which provisioning-mode
// servers answer outside the provisioning agent's lock) until it answers, and only then is the
// request sent. A node that answers nothing within the budget is sent the request anyway: the
// request's own timeout and the lost-reply watch then decide, as they did before.
import type { ChoriaClient } from '../choria/client.js';
import { NodeProbe } from './node-probe.js';
import { sleep } from '../util/backoff.js';

export interface HeardBeforeChangeOptions {
  readonly client: ChoriaClient;
  readonly identity: string;
  readonly signal: AbortSignal;
  /** one ping's wait */
  readonly pingTimeoutMs: number;
  /** how long to ping at most before sending anyway */
  readonly budgetMs: number;
  /** asked before each ping: a ping after this instance lost its right to act is not sent */
  readonly mayAsk: () => void;
}

/** How the wait ended: `settled` (nothing to wait for), `heard` (the node answered) or `unheard`. */
export type HeardBeforeChange =
  | { readonly how: 'settled' }
  | { readonly how: 'heard' | 'unheard'; readonly pings: number; readonly waitedMs: number };

/**
 * Returns at once while the broker link has been steady for the fleet's reconnect time; otherwise
 * once the node answered a ping (any answer, a refusal too: it is connected), or after `budgetMs`
 * of the link being up.
 * Rejects with the abort's reason when `signal` aborts, and with whatever `mayAsk` throws.
 */
export async function heardBeforeChange(opts: HeardBeforeChangeOptions): Promise<HeardBeforeChange> {
  const { client } = opts;
  if (client.link.settled) return { how: 'settled' };
  const probe = new NodeProbe(client, opts.identity, opts.signal);
  const started = performance.now();
  const waited = (): number => Math.round(performance.now() - started);
  let pings = 0;
  // the budget runs while the link is up: an outage of any length is waited out first
  let upAt: number | undefined;
  for (;;) {
    if (opts.signal.aborted) throw opts.signal.reason;
    if (!client.link.state.up) {
      upAt = undefined;
      await sleep(50, opts.signal);
      continue;
    }
    upAt ??= performance.now();
    const left = opts.budgetMs - (performance.now() - upAt);
    if (left <= 0) break;
    opts.mayAsk();
    pings++;
    // any answer, if only a refusal, means the node is connected (the probe's rule)
    const timeoutMs = Math.max(1, Math.min(opts.pingTimeoutMs, left));
    if ((await probe.ping(timeoutMs)) === 'answered') return { how: 'heard', pings, waitedMs: waited() };
  }
  return { how: 'unheard', pings, waitedMs: waited() };
}

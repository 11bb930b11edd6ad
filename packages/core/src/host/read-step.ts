// The read step: a request whose reply the attempt needs (jwt, inventory, and the key-making
// gen25519 and gencsr). Tried as upstream does, with its back-off between tries. Two things make it
// more than a loop of tries:
// - the attempt's first contact with the node gets a short first try; silence then is checked with
//   a ping (the liveness probe), so a node that vanished after discovery does not hold a worker for
//   every try of the step (NodeGoneError);
// - a `read` request (jwt, inventory) that met a broker outage is sent again once the link is back,
//   with a short timeout while the servers are still reconnecting, without counting against its
//   tries (STEP_RULES says which steps only read).
import { RpcReplyLostError, RpcTimeoutError, repeatingCannotHelp } from '../choria/errors.js';
import type { LinkState } from '../choria/link.js';
import { sleep } from '../util/backoff.js';
import { abortError } from '../util/cancelled.js';
import {
  NodeGoneError,
  STEP_RULES,
  UNSETTLED_TRY_MS,
  backOff,
  beforeTry,
  failedTry,
  logTry,
  sendTry,
  stepFailed,
  stepName,
  takeLiveness,
  tryOptions,
  type LivenessProbe,
  type StepContext,
  type StepRequest,
} from './step.js';
import type { RpcName } from './types.js';

/** bounds the free tries of one step (a broker that keeps flapping) */
const MAX_FREE_TRIES = 20;

/** Sends the request until the node replies; returns the parsed reply, or throws naming the last error. */
export async function readStep<T>(ctx: StepContext, req: StepRequest<T>): Promise<T> {
  const name = stepName(req);
  const { tries, kind } = STEP_RULES[name];
  const taken = takeLiveness(ctx);
  // not for a one-try step: it has no second try to give the full timeout
  const probing = tries > 1 ? taken : undefined;
  const link = ctx.client.link;
  let last: Error | undefined;
  let made = 0;
  let free = 0;
  for (let attempt = 1; attempt <= tries; attempt++) {
    made = attempt;
    beforeTry(ctx, name);
    const started = performance.now();
    const probeThisTry = probing !== undefined && attempt === 1;
    const linkBefore = link.state;
    // sent while the servers may still be reconnecting: it may be lost on the way, so no full timeout
    const quick = kind === 'read' && !probeThisTry && free < MAX_FREE_TRIES && !link.settled;
    const shortMs = probeThisTry ? probing.timeoutMs : quick ? UNSETTLED_TRY_MS : undefined;
    try {
      return await sendTry(ctx, req, name, tryOptions(ctx, kind, shortMs));
    } catch (err) {
      last = failedTry(ctx, name, err);
      if (kind === 'read' && free < MAX_FREE_TRIES && metOutage(last, quick)) {
        free++;
        attempt--;
        await afterOutage(ctx, name, last);
        continue;
      }
      if (probeThisTry && last instanceof RpcTimeoutError) {
        await afterSilentFirstTry(ctx, name, probing, linkBefore, started);
        continue;
      }
      const answered = req.answer?.(last);
      if (answered !== undefined) return answered;
      if (repeatingCannotHelp(last)) break;
      await backOff(ctx, name, attempt, last);
    }
  }
  return stepFailed(ctx, name, made, last);
}

/** A reply lost with the broker, or a quick try unanswered while the link was unsettled. */
function metOutage(err: Error, quick: boolean): boolean {
  return (quick && err instanceof RpcTimeoutError) || err instanceof RpcReplyLostError;
}

/** Says so, and waits (checking every 50 ms) until the broker link is up, or the step is cancelled. */
async function afterOutage(ctx: StepContext, name: RpcName, err: Error): Promise<void> {
  const said = (reason: string): string =>
    `${name} to ${ctx.identity} met a broker outage (${reason}); sending it again once the connection is back`;
  logTry(ctx, 'info', said, err);
  while (!ctx.client.link.state.up) {
    try {
      await sleep(50, ctx.signal);
    } catch {
      throw abortError(ctx.signal, name);
    }
  }
}

/**
 * The short first try went unanswered: the liveness probe asks the node cheaply whether it is
 * there. No answer on a settled link: it is gone (thrown). Otherwise the step goes on with its
 * full timeouts.
 */
async function afterSilentFirstTry(
  ctx: StepContext,
  name: RpcName,
  probing: LivenessProbe,
  linkBefore: LinkState,
  started: number,
): Promise<void> {
  const link = ctx.client.link;
  const checkStarted = performance.now();
  if (!(await probing.check())) {
    if (ctx.signal.aborted) throw abortError(ctx.signal, name);
    // Silence across a broker outage, or while the servers may still be reconnecting after
    // one, says nothing about the node: it gets the full timeout instead of being dropped.
    if (link.settledSince(linkBefore))
      throw new NodeGoneError(ctx.identity, name, Math.round(performance.now() - started));
    ctx.logger.info(
      `${ctx.identity} did not answer ${name} nor rpcutil#ping ` +
        `while the broker connection was down or just back; ` +
        `not taken as gone, trying again with the full timeout`,
    );
    return;
  }
  if (!link.settledSince(linkBefore)) {
    ctx.logger.info(
      `${ctx.identity} did not answer ${name} within ${probing.timeoutMs} ms, ` +
        `and the broker connection was down or just back: trying again`,
    );
    return;
  }
  // it answered: slow, not gone; the next tries get the full timeout at once
  ctx.logger.info(
    `${ctx.identity} did not answer ${name} within ${probing.timeoutMs} ms but answered rpcutil#ping after ` +
      `${Math.round(performance.now() - checkStarted)} ms; trying again with the full timeout`,
  );
}

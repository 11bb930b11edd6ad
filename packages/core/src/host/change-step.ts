// The change step: a request that changes the node (configure, restart, shutdown, release_update).
// It is never re-sent blindly: a node that accepted `restart` holds its agent mutex and answers
// nothing more, then leaves provisioning mode. So:
// - after a broker outage, while the servers may still be reconnecting, the node is pinged first
//   and the request goes once it answers (heard-before-change.ts);
// - its intent is recorded in the node's history and the right to act asked right before it goes
//   (step.ts sendTry);
// - when no reply came, the node is watched to learn whether it acted (lost-reply.ts) before
//   anything is sent again; the attempt gives its worker up meanwhile (HostJob.onWatching).
import { RpcAbortError, RpcReplyLostError, noReplyCame, repeatingCannotHelp } from '../choria/errors.js';
import { abortError, pausedError } from '../util/cancelled.js';
import { ProvisionerError, publicMessageOf } from '../util/errors.js';
import { heardBeforeChange, type HeardBeforeChange } from './heard-before-change.js';
import { confirmAfterLostReply, type ChangingAction } from './lost-reply.js';
import {
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
  type StepContext,
  type StepRequest,
  type StepResult,
} from './step.js';
import type { LostReplyFinding, RpcName } from './types.js';

/** pinging a node before a node-changing request, after an outage, ends by this (or the per-try timeout) */
const HEARD_BUDGET_MS = 20_000;

/** Sends the request until the node replies, or is found to have acted without a reply it could send. */
export async function changeStep<T>(ctx: StepContext, req: StepRequest<T>): Promise<StepResult<T>> {
  const name = stepName(req);
  const action = req.action as ChangingAction;
  takeLiveness(ctx); // the first contact: a lost reply is investigated instead of a liveness check
  const options = tryOptions(ctx, 'change');
  let last: Error | undefined;
  let made = 0;
  for (let attempt = 1; attempt <= STEP_RULES[name].tries; attempt++) {
    made = attempt;
    beforeTry(ctx, name);
    // (outside the try: a pause, a cancel or a lost right to act while waiting ends the step as above)
    await untilHeard(ctx, name);
    const started = performance.now();
    try {
      return { replied: true, value: await sendTry(ctx, req, name, options) };
    } catch (err) {
      last = failedTry(ctx, name, err);
      const answered = req.answer?.(last);
      if (answered !== undefined) return { replied: true, value: answered };
      if (repeatingCannotHelp(last)) break;
      if (!noReplyCame(last)) {
        await backOff(ctx, name, attempt, last);
        continue;
      }
      // the reply may have been lost after the node acted on the request
      const { finding, back } = await investigate(ctx, name, action, started, last, req.data);
      if (finding === 'acted' || finding === 'unsure') return { replied: false, finding, back };
      if (finding === 'gone') {
        last = thenGone(last);
        break;
      }
      // the node was watched for longer than any back-off
      await backOff(ctx, name, attempt, last, false);
    }
  }
  return stepFailed(ctx, name, made, last);
}

/** The error of a request whose node then stopped answering discovery. */
function thenGone(last: Error): Error {
  const said = (reason: string): string => `${reason}; then the node stopped answering discovery`;
  return new ProvisionerError(said(last.message), { cause: last, publicMessage: said(publicMessageOf(last)) });
}

/**
 * Before a node-changing request while the servers may still be reconnecting after a broker
 * outage: waits until the node answers a ping (heard-before-change.ts), for at most about as long
 * as the request itself would have waited unanswered.
 */
async function untilHeard(ctx: StepContext, name: RpcName): Promise<void> {
  let heard: HeardBeforeChange;
  const budgetMs = ctx.timeoutMs ?? HEARD_BUDGET_MS;
  try {
    heard = await heardBeforeChange({
      client: ctx.client,
      identity: ctx.identity,
      signal: ctx.signal,
      // several pings fit in the budget however short the step's timeout
      pingTimeoutMs: Math.min(UNSETTLED_TRY_MS, budgetMs / 4),
      budgetMs,
      mayAsk: () => {
        if (ctx.pause.paused) throw pausedError(name);
        ctx.claim.assertMayAct(`rpcutil#ping before ${name}`);
      },
    });
  } catch (err) {
    if (ctx.signal.aborted || err instanceof RpcAbortError) throw abortError(ctx.signal, name);
    throw err;
  }
  if (ctx.pause.paused) throw pausedError(name);
  if (heard.how === 'heard' && heard.pings > 1) {
    ctx.logger.info(
      `${ctx.identity} answered rpcutil#ping after ${heard.waitedMs} ms (${heard.pings} pings) ` +
        `while the servers were reconnecting to the broker; sending ${name}`,
    );
  } else if (heard.how === 'unheard') {
    ctx.logger.info(
      `${ctx.identity} answered none of ${heard.pings} rpcutil#ping in ${heard.waitedMs} ms ` +
        `after the broker connection came back; sending ${name} anyway`,
    );
  }
}

async function investigate(
  ctx: StepContext,
  name: RpcName,
  action: ChangingAction,
  sentAt: number,
  err: Error,
  sent: Record<string, unknown>,
): Promise<{ finding: LostReplyFinding; back: boolean }> {
  // the action's own token opens the agent-busy check (lost-reply.ts agentBusy)
  const token = typeof sent['token'] === 'string' ? sent['token'] : undefined;
  // the version asked for (release_update): whether it tells is the action's rule (lost-reply.ts versionTells)
  const targetVersion = typeof sent['version'] === 'string' ? sent['version'] : undefined;
  logTry(
    ctx,
    'warn',
    (reason) =>
      `The reply of ${name} from ${ctx.identity} was lost (${reason}); ` +
      `checking whether the node acted before sending anything more`,
    err,
  );
  ctx.onWatching?.();
  let finding: LostReplyFinding;
  let back = false;
  try {
    finding = await confirmAfterLostReply({
      client: ctx.client,
      witness: ctx.witness,
      identity: ctx.identity,
      action,
      sentAt,
      reconnected: err instanceof RpcReplyLostError,
      signal: ctx.signal,
      ...(ctx.lostReply !== undefined ? { timings: ctx.lostReply } : {}),
      ...(token !== undefined ? { token } : {}),
      ...(targetVersion !== undefined ? { targetVersion } : {}),
      onBack: () => (back = true),
      onBusy: () =>
        ctx.logger.info(
          `${ctx.identity} still answers discovery but its provisioning agent is busy, still carrying out ${name}: ` +
            `watching it until it acts`,
        ),
    });
  } catch (probeErr) {
    if (ctx.signal.aborted) throw abortError(ctx.signal, name);
    // Without an answer either way nothing is re-sent: the node comes back with the next
    // discovery if it is still in provisioning mode.
    logTry(
      ctx,
      'warn',
      (reason) => `Could not check ${ctx.identity} after the lost ${name} reply: ${reason}`,
      probeErr,
    );
    finding = 'gone';
  }
  ctx.metrics.lostReply(name, finding);
  const verdict = {
    acted: back ? 'it carried the action out and is back in provisioning mode already' : 'it carried the action out',
    not_acted: 'it is still in provisioning mode and did not act, sending it again',
    gone: 'it no longer answers discovery, not sending it again',
    unsure:
      'it is still in provisioning mode, but its events may have been lost with the broker: the restart will tell',
  }[finding];
  ctx.logger.info(`After the lost ${name} reply from ${ctx.identity}: ${verdict}`);
  return { finding, back };
}

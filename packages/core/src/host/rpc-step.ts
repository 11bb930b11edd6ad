// One RPC step of the pipeline: tries, the upstream back-off between tries, timing metrics, error
// counters, the pause check before every try and cancellation. After the last try the error names
// the step, the tries and the last real error. A node-changing action whose reply was lost is not
// re-sent before the node was observed (lost-reply.ts).
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import {
  ProvisioningLockError,
  RpcAbortError,
  RpcReplyLostError,
  RpcTimeoutError,
  noReplyCame,
  repeatingCannotHelp,
} from '../choria/errors.js';
import type { HostMetrics, LostReplyFinding, RpcName } from './types.js';
import { FIVE_SEC, backoffDelay, sleep } from '../util/backoff.js';
import type { PauseFlag } from '../util/pause.js';
import { CancelledError, isCancelled, pausedError } from '../util/cancelled.js';
import type { LifecycleWitness } from './lifecycle-witness.js';
import {
  DEFAULT_RECONNECT_GRACE_MS,
  confirmAfterLostReply,
  isChangingAction,
  type ChangingAction,
  type LostReplyTimings,
} from './lost-reply.js';
import { ProvisionerError, failureTexts, publicMessageOf } from '../util/errors.js';
import { assertMayChange, type FencedSend, type NodeFence } from './fence.js';
import { heardBeforeChange, type HeardBeforeChange } from './heard-before-change.js';

export interface StepContext {
  readonly identity: string;
  readonly client: ChoriaClient;
  readonly metrics: HostMetrics;
  readonly pause: PauseFlag;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** lifecycle events seen, the first evidence after a lost reply */
  readonly witness?: LifecycleWitness;
  /** test hook: back-off between tries (default: the upstream FiveSec policy) */
  readonly backoff?: (failedTry: number) => number;
  /** per-try timeout; default: the client's */
  readonly timeoutMs?: number;
  /** how long a lost reply is investigated (lost-reply.ts) */
  readonly lostReply?: LostReplyTimings;
  /** the attempt's first contact with the node: see {@link LivenessProbe} */
  readonly liveness?: LivenessProbe;
  /** the attempt only watches the node from here (HostJob.onWatching) */
  readonly onWatching?: () => void;
  /** asked right before every request of the attempt (fence.ts); none: always allowed */
  readonly fence?: NodeFence;
  /** blanks the secrets the attempt knows of (its token, what the helper returned) out of a text */
  readonly mask?: (text: string) => string;
}

/** Logs a failure of a try: its public message at `level`, and its full text at debug when that says more. */
function logTry(ctx: StepContext, level: 'info' | 'warn', text: (reason: string) => string, err: unknown): void {
  const { message, detail } = failureTexts(err, ctx.mask);
  ctx.logger[level](text(message));
  if (detail !== undefined && ctx.logger.isDebugEnabled()) ctx.logger.debug(text(detail));
}

/**
 * A node that vanished after discovery would hold a worker for every try of the first step (five
 * tries of up to 22 s). So the attempt's first RPC (unless it changes the node) gets only
 * `timeoutMs` on its first try; when that passes without a reply, `check()` asks the node
 * cheaply whether it is there at all. No answer: the node is gone (NodeGoneError). An answer: the
 * step goes on with its full timeouts. Used once per attempt.
 */
export interface LivenessProbe {
  readonly timeoutMs: number;
  /** true when the node answered anything within timeoutMs */
  check(): Promise<boolean>;
  used: boolean;
}

/** The node answered neither the attempt's first request nor the liveness check that followed. */
export class NodeGoneError extends ProvisionerError {
  constructor(
    readonly identity: string,
    readonly step: RpcName,
    readonly waitedMs: number,
  ) {
    super(
      `${identity} is gone: no reply to ${step} and to rpcutil#ping within ${waitedMs} ms; ` +
        `it comes back with the next discovery or startup event`,
    );
  }
}

/** The node is being provisioned by another provisioner (its provisioning lock is held). */
export class LockedElsewhereError extends ProvisionerError {
  constructor(
    readonly identity: string,
    readonly step: RpcName,
  ) {
    super(`${identity} is locked by another provisioner (${step}: Could not obtain provisioning lock)`);
  }
}

/** A step failed after all its tries. */
export class StepFailedError extends ProvisionerError {
  constructor(
    readonly step: RpcName,
    readonly tries: number,
    readonly last: Error,
    identity: string,
  ) {
    const said = (reason: string): string =>
      `could not perform ${step} on ${identity}: ${tries} ${tries === 1 ? 'try' : 'tries'}, last: ${reason}`;
    super(said(last.message), { cause: last, publicMessage: said(publicMessageOf(last)) });
  }
}

/** Tries per step, as upstream. */
export const STEP_TRIES: Readonly<Record<RpcName, number>> = {
  'choria_provision#jwt': 3,
  'choria_provision#gen25519': 5,
  'rpcutil#inventory': 5,
  'choria_provision#gencsr': 1,
  'choria_provision#configure': 5,
  'choria_provision#restart': 3,
  'choria_provision#shutdown': 3,
  'choria_provision#release_update': 3,
};

/**
 * Steps that only read the node: sending one again cannot change it, so a try that met a broker
 * outage (its reply lost, or sent while the servers were still reconnecting) is made again at once
 * with a short timeout, without counting against the step's tries. Steps that make keys or CSRs
 * are not here: two of them could both act, and the reply read might not be the last one's.
 */
const READ_ONLY_STEPS: ReadonlySet<RpcName> = new Set<RpcName>(['choria_provision#jwt', 'rpcutil#inventory']);
/** a read-only try while the broker link is unsettled waits this long, not the full timeout */
const UNSETTLED_TRY_MS = 2_000;
/** pinging a node before a node-changing request, after an outage, ends by this (or the per-try timeout) */
const HEARD_BUDGET_MS = 20_000;
/** bounds the free tries of one step (a broker that keeps flapping) */
const MAX_FREE_TRIES = 20;

/** What one step sends and how its reply is read. */
export interface StepRequest<T> {
  readonly agent: 'choria_provision' | 'rpcutil';
  readonly action: string;
  readonly data: Record<string, unknown>;
  readonly parse: (data: unknown) => T;
  /** a refusal that is an answer, not a failure: its value ends the step like a reply (no error counted) */
  readonly answer?: (err: Error) => T | undefined;
}

/** How a step ended: with the parsed reply, or (node-changing actions only) proven done without one. */
export type StepResult<T> =
  | { readonly replied: true; readonly value: T }
  /** `back`: the node acted and is in provisioning mode again already (lost-reply.ts onBack) */
  | { readonly replied: false; readonly finding: 'acted' | 'unsure'; readonly back: boolean };

function isAbort(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || err instanceof RpcAbortError;
}

export async function rpcStep<T>(ctx: StepContext, req: StepRequest<T>): Promise<StepResult<T>> {
  const name = `${req.agent}#${req.action}` as RpcName;
  const tries = STEP_TRIES[name];
  const changing = isChangingAction(req.agent, req.action) ? req.action : undefined;
  const recorded: FencedSend | undefined =
    req.agent === 'choria_provision' && (req.action === 'configure' || req.action === 'restart')
      ? req.action
      : undefined;
  const rpcOptions = {
    signal: ctx.signal,
    ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
    ...(changing !== undefined
      ? { reconnectGraceMs: ctx.lostReply?.reconnectGraceMs ?? DEFAULT_RECONNECT_GRACE_MS }
      : {}),
  };
  // the attempt's first contact: a short first try, then the liveness check (LivenessProbe)
  const probe = ctx.liveness !== undefined && !ctx.liveness.used ? ctx.liveness : undefined;
  if (probe !== undefined) probe.used = true;
  // not for a node-changing action (its lost reply is investigated instead) nor a one-try step
  const probing = probe !== undefined && changing === undefined && tries > 1 ? probe : undefined;
  // Created only when a try failed: an Error captures a stack trace, which costs more than the
  // rest of a successful step.
  let last: Error | undefined;
  let made = 0;
  const link = ctx.client.link;
  const readOnly = READ_ONLY_STEPS.has(name);
  let free = 0;
  for (let attempt = 1; attempt <= tries; attempt++) {
    made = attempt;
    if (ctx.signal.aborted) throw abortError(ctx.signal, name);
    if (ctx.pause.paused) throw pausedError(name);
    // (outside the try: a pause, a cancel or a lost right to act while waiting ends the step as above)
    if (changing !== undefined) await untilHeard(ctx, name);
    const started = performance.now();
    let investigated = false;
    const probeThisTry = probing !== undefined && attempt === 1;
    const linkBefore = link.state;
    // sent while the servers may still be reconnecting: it may be
    // lost on the way, so do not wait the full timeout for it
    const quick = readOnly && !probeThisTry && free < MAX_FREE_TRIES && !link.settled;
    try {
      const shortMs = probeThisTry ? probing.timeoutMs : quick ? UNSETTLED_TRY_MS : undefined;
      const options =
        shortMs !== undefined ? { ...rpcOptions, timeoutMs: Math.min(shortMs, ctx.timeoutMs ?? Infinity) } : rpcOptions;
      const reply = await rpcWatchingAfterReconnect(ctx, changing !== undefined, async () => {
        await mayChangeNow(ctx, name, recorded);
        return await ctx.client.rpc(ctx.identity, req.agent, req.action, req.data, options);
      });
      ctx.metrics.rpcTime(name, (performance.now() - started) / 1000);
      return { replied: true, value: req.parse(reply.data) };
    } catch (err) {
      // refused by the fence: nothing was sent, and nothing more will be
      if (isCancelled(err, 'lease')) throw err;
      ctx.metrics.rpcTime(name, (performance.now() - started) / 1000);
      if (err instanceof ProvisioningLockError) throw new LockedElsewhereError(ctx.identity, name);
      if (isAbort(err, ctx.signal)) throw abortError(ctx.signal, name);
      last = err instanceof Error ? err : new Error(String(err));
      if (
        readOnly &&
        free < MAX_FREE_TRIES &&
        ((quick && err instanceof RpcTimeoutError) || err instanceof RpcReplyLostError)
      ) {
        free++;
        attempt--;
        logTry(
          ctx,
          'info',
          (reason) =>
            `${name} to ${ctx.identity} met a broker outage (${reason}); sending it again once the connection is back`,
          last,
        );
        await untilLinkUp(ctx, name);
        continue;
      }
      if (probeThisTry && err instanceof RpcTimeoutError) {
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
          continue;
        }
        if (!link.settledSince(linkBefore)) {
          ctx.logger.info(
            `${ctx.identity} did not answer ${name} within ${probing.timeoutMs} ms, ` +
              `and the broker connection was down or just back: trying again`,
          );
          continue;
        }
        // it answered: slow, not gone; the next tries get the full timeout at once
        ctx.logger.info(
          `${ctx.identity} did not answer ${name} within ${probing.timeoutMs} ms but answered rpcutil#ping after ` +
            `${Math.round(performance.now() - checkStarted)} ms; trying again with the full timeout`,
        );
        continue;
      }
      const answered = req.answer?.(last);
      if (answered !== undefined) return { replied: true, value: answered };
      if (repeatingCannotHelp(last)) break;
      if (changing !== undefined && noReplyCame(err)) {
        // the reply may have been lost after the node acted on the request
        const { finding, back } = await investigate(ctx, name, changing, started, last, req.data);
        if (finding === 'acted' || finding === 'unsure') return { replied: false, finding, back };
        if (finding === 'gone') {
          const said = (reason: string): string => `${reason}; then the node stopped answering discovery`;
          last = new ProvisionerError(said(last.message), { cause: last, publicMessage: said(publicMessageOf(last)) });
          break;
        }
        investigated = true; // the node was watched for longer than any back-off
      }
      if (attempt < tries) {
        logTry(
          ctx,
          'warn',
          (reason) => `Could not perform ${name} on ${ctx.identity} on try ${attempt} / ${tries}: ${reason}`,
          last,
        );
        if (!investigated) {
          try {
            await sleep(ctx.backoff?.(attempt) ?? backoffDelay(FIVE_SEC, attempt), ctx.signal);
          } catch {
            throw abortError(ctx.signal, name);
          }
        }
      }
    }
  }
  ctx.metrics.rpcError(name);
  throw new StepFailedError(name, made, last ?? new Error('not attempted'), ctx.identity);
}

/**
 * Runs one request. A node-changing request still unanswered when the broker link comes back only
 * waits from then on (for a late reply, then the lost-reply watch): the attempt gives its worker
 * up at that moment (HostJob.onWatching), so the queued nodes start as soon as the link is back.
 */
async function rpcWatchingAfterReconnect<T>(ctx: StepContext, changing: boolean, send: () => Promise<T>): Promise<T> {
  const onWatching = ctx.onWatching;
  if (!changing || onWatching === undefined) return await send();
  const stop = ctx.client.link.onRestored(onWatching);
  try {
    return await send();
  } finally {
    stop();
  }
}

/**
 * The last word before a request goes out: the fence is asked (for every request of an attempt: a
 * read after the right lapsed is wasted at best, and is sent to a node another instance may have
 * restarted already; for a node-changing one it is what keeps two instances apart), the shared history
 * told (configure and restart), and the fence asked again, since telling it may have taken time.
 * Nothing is awaited between the last question and the send.
 */
async function mayChangeNow(ctx: StepContext, name: RpcName, recorded: FencedSend | undefined): Promise<void> {
  assertMayChange(ctx.fence, name);
  if (recorded === undefined || ctx.fence?.sending === undefined) return;
  await ctx.fence.sending(ctx.identity, recorded);
  if (ctx.signal.aborted) throw abortError(ctx.signal, name);
  assertMayChange(ctx.fence, name);
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
        assertMayChange(ctx.fence, `rpcutil#ping before ${name}`);
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

/** Waits (checking every 50 ms) until the broker link is up, or the step is cancelled. */
async function untilLinkUp(ctx: StepContext, name: RpcName): Promise<void> {
  while (!ctx.client.link.state.up) {
    try {
      await sleep(50, ctx.signal);
    } catch {
      throw abortError(ctx.signal, name);
    }
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

/** `what` was cancelled by `signal`: for the signal's reason when that is a cancellation, else a stop. */
export function abortError(signal: AbortSignal, what: string): CancelledError {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  return new CancelledError(isCancelled(reason) ? reason.reason : 'stop', `${what} was cancelled: ${why}`);
}

// What every RPC step of an attempt shares: its context, its rule (how many tries, whether it reads
// or changes the node, whether its intent is recorded first), the errors that end a step, and one
// try's send and failure. The two kinds of step are read-step.ts (every request whose reply the
// attempt needs) and change-step.ts (a request that changes the node, never re-sent blindly).
import type { Logger } from 'winston';
import type { ChoriaClient, RpcOptions } from '../choria/client.js';
import { ProvisioningLockError, RpcAbortError } from '../choria/errors.js';
import { FIVE_SEC, backoffDelay, sleep } from '../util/backoff.js';
import { abortError, isCancelled, pausedError } from '../util/cancelled.js';
import { ProvisionerError, failureTexts, publicMessageOf } from '../util/errors.js';
import type { PauseFlag } from '../util/pause.js';
import type { Claim, RecordedChange } from './claim.js';
import type { LifecycleWitness } from './lifecycle-witness.js';
import { DEFAULT_RECONNECT_GRACE_MS, type LostReplyTimings } from './lost-reply.js';
import type { HostMetrics, RpcName } from './types.js';

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
  /** the attempt's right to act on the node, asked right before every request (claim.ts) */
  readonly claim: Claim;
  /** blanks the secrets the attempt knows of (its token, what the helper returned) out of a text */
  readonly mask?: (text: string) => string;
}

/** Logs a failure of a try: its public message at `level`, and its full text at debug when that says more. */
export function logTry(ctx: StepContext, level: 'info' | 'warn', text: (reason: string) => string, err: unknown): void {
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

/**
 * What kind of request a step sends:
 * - `read`: it only reads the node, so sending it again cannot change it: a try that met a broker
 *   outage (its reply lost, or sent while the servers were still reconnecting) is made again at
 *   once with a short timeout, without counting against the step's tries;
 * - `make`: it makes a key or a CSR; two of them could both act, and the reply read might not be
 *   the last one's, so every try counts;
 * - `change`: it changes the node (change-step.ts): sent once the node is heard after an outage,
 *   and a lost reply is investigated, never re-sent blindly.
 */
export type StepKind = 'read' | 'make' | 'change';

export interface StepRule {
  /** tries, as upstream */
  readonly tries: number;
  readonly kind: StepKind;
  /** recorded in the node's shared history before it goes out (Claim.beforeSend) */
  readonly records?: RecordedChange;
}

export const STEP_RULES: Readonly<Record<RpcName, StepRule>> = {
  'choria_provision#jwt': { tries: 3, kind: 'read' },
  'choria_provision#gen25519': { tries: 5, kind: 'make' },
  'rpcutil#inventory': { tries: 5, kind: 'read' },
  'choria_provision#gencsr': { tries: 1, kind: 'make' },
  'choria_provision#configure': { tries: 5, kind: 'change', records: 'configure' },
  'choria_provision#restart': { tries: 3, kind: 'change', records: 'restart' },
  'choria_provision#shutdown': { tries: 3, kind: 'change' },
  'choria_provision#release_update': { tries: 3, kind: 'change' },
};

/** a read-only try while the broker link is unsettled waits this long, not the full timeout */
export const UNSETTLED_TRY_MS = 2_000;

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

/** The attempt's first contact with the node takes the liveness probe (whatever the step); undefined after. */
export function takeLiveness(ctx: StepContext): LivenessProbe | undefined {
  const probe = ctx.liveness !== undefined && !ctx.liveness.used ? ctx.liveness : undefined;
  if (probe !== undefined) probe.used = true;
  return probe;
}

/** The request options of one try: the step's timeout, or `shortMs` when shorter; a change waits for a late reply. */
export function tryOptions(ctx: StepContext, kind: StepKind, shortMs?: number): RpcOptions {
  const timeoutMs = shortMs !== undefined ? Math.min(shortMs, ctx.timeoutMs ?? Infinity) : ctx.timeoutMs;
  return {
    signal: ctx.signal,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(kind === 'change' ? { reconnectGraceMs: ctx.lostReply?.reconnectGraceMs ?? DEFAULT_RECONNECT_GRACE_MS } : {}),
  };
}

/** Before each try: a cancelled or paused attempt sends nothing more. */
export function beforeTry(ctx: StepContext, name: RpcName): void {
  if (ctx.signal.aborted) throw abortError(ctx.signal, name);
  if (ctx.pause.paused) throw pausedError(name);
}

/** Sends one try of the step and reads the reply's data; its time is measured either way. */
export async function sendTry<T>(
  ctx: StepContext,
  req: StepRequest<T>,
  name: RpcName,
  options: RpcOptions,
): Promise<T> {
  const rule = STEP_RULES[name];
  const started = performance.now();
  try {
    const reply = await rpcWatchingAfterReconnect(ctx, rule.kind === 'change', async () => {
      await ctx.claim.beforeSend(name, rule.records, ctx.signal);
      return await ctx.client.rpc(ctx.identity, req.agent, req.action, req.data, options);
    });
    ctx.metrics.rpcTime(name, (performance.now() - started) / 1000);
    return req.parse(reply.data);
  } catch (err) {
    // refused by the claim: nothing was sent, and nothing more will be
    if (!isCancelled(err, 'lease')) ctx.metrics.rpcTime(name, (performance.now() - started) / 1000);
    throw err;
  }
}

/**
 * What a failed try leaves: thrown when it ends the step at once (the right to act lapsed,
 * another provisioner holds the node's lock, the attempt was cancelled), else the error to weigh.
 */
export function failedTry(ctx: StepContext, name: RpcName, err: unknown): Error {
  if (isCancelled(err, 'lease')) throw err;
  if (err instanceof ProvisioningLockError) throw new LockedElsewhereError(ctx.identity, name);
  if (isAbort(err, ctx.signal)) throw abortError(ctx.signal, name);
  return err instanceof Error ? err : new Error(String(err));
}

/** After a failed try that is not the last: says so, and waits the upstream back-off unless `wait` is false. */
export async function backOff(
  ctx: StepContext,
  name: RpcName,
  attempt: number,
  last: Error,
  wait = true,
): Promise<void> {
  const tries = STEP_RULES[name].tries;
  if (attempt >= tries) return;
  const said = (reason: string): string =>
    `Could not perform ${name} on ${ctx.identity} on try ${attempt} / ${tries}: ${reason}`;
  logTry(ctx, 'warn', said, last);
  if (!wait) return;
  try {
    await sleep(ctx.backoff?.(attempt) ?? backoffDelay(FIVE_SEC, attempt), ctx.signal);
  } catch {
    throw abortError(ctx.signal, name);
  }
}

/** The step failed after `made` tries: counted, and thrown naming the last real error. */
export function stepFailed(ctx: StepContext, name: RpcName, made: number, last: Error | undefined): never {
  ctx.metrics.rpcError(name);
  throw new StepFailedError(name, made, last ?? new Error('not attempted'), ctx.identity);
}

/** The step's name, as metrics and messages know it. */
export function stepName(req: StepRequest<unknown>): RpcName {
  return `${req.agent}#${req.action}` as RpcName;
}

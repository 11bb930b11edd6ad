// One RPC step of the pipeline: tries, the upstream back-off between tries, timing metrics, error
// counters, the pause check before every try and cancellation. After the last try the error names
// the step, the tries and the last real error.
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import { ProvisioningLockError, RpcAbortError } from '../choria/errors.js';
import type { ProvisionerMetrics, RpcName } from '../metrics/metrics.js';
import { FIVE_SEC, backoffDelay, sleep } from '../util/backoff.js';
import { PausedError, type PauseFlag } from '../util/pause.js';

export interface StepContext {
  readonly identity: string;
  readonly client: ChoriaClient;
  readonly metrics: ProvisionerMetrics;
  readonly pause: PauseFlag;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** test hook: back-off between tries (default: the upstream FiveSec policy) */
  readonly backoff?: (failedTry: number) => number;
  /** per-try timeout; default: the client's */
  readonly timeoutMs?: number;
}

/** The node is being provisioned by another provisioner (its provisioning lock is held). */
export class LockedElsewhereError extends Error {
  constructor(readonly identity: string, readonly step: RpcName) {
    super(`${identity} is locked by another provisioner (${step}: Could not obtain provisioning lock)`);
    this.name = 'LockedElsewhereError';
  }
}

/** A step failed after all its tries. */
export class StepFailedError extends Error {
  constructor(readonly step: RpcName, readonly tries: number, readonly last: Error, identity: string) {
    super(`could not perform ${step} on ${identity}: ${tries} ${tries === 1 ? 'try' : 'tries'}, last: ${last.message}`, { cause: last });
    this.name = 'StepFailedError';
  }
}

function isAbort(err: unknown, signal: AbortSignal): boolean {
  return signal.aborted || err instanceof RpcAbortError;
}

export async function rpcStep<T>(
  ctx: StepContext,
  agent: string,
  action: string,
  data: Record<string, unknown>,
  tries: number,
  parse: (data: unknown) => T,
): Promise<T> {
  const name = `${agent}#${action}` as RpcName;
  // Created only when a try failed: an Error captures a stack trace, which costs more than the
  // rest of a successful step.
  let last: Error | undefined;
  for (let attempt = 1; attempt <= tries; attempt++) {
    if (ctx.signal.aborted) throw abortError(ctx.signal, name);
    if (ctx.pause.paused) throw new PausedError(name);
    const started = performance.now();
    try {
      const reply = await ctx.client.rpc(ctx.identity, agent, action, data, {
        signal: ctx.signal,
        ...(ctx.timeoutMs !== undefined ? { timeoutMs: ctx.timeoutMs } : {}),
      });
      ctx.metrics.rpcTime(name, (performance.now() - started) / 1000);
      return parse(reply.data);
    } catch (err) {
      ctx.metrics.rpcTime(name, (performance.now() - started) / 1000);
      if (err instanceof ProvisioningLockError) throw new LockedElsewhereError(ctx.identity, name);
      if (isAbort(err, ctx.signal)) throw abortError(ctx.signal, name);
      last = err instanceof Error ? err : new Error(String(err));
      if (attempt < tries) {
        ctx.logger.warn(`Could not perform ${name} on ${ctx.identity} on try ${attempt} / ${tries}: ${last.message}`);
        try {
          await sleep(ctx.backoff?.(attempt) ?? backoffDelay(FIVE_SEC, attempt), ctx.signal);
        } catch {
          throw abortError(ctx.signal, name);
        }
      }
    }
  }
  ctx.metrics.rpcError(name);
  throw new StepFailedError(name, tries, last ?? new Error('not attempted'), ctx.identity);
}

export function abortError(signal: AbortSignal, what: string): Error {
  const reason: unknown = signal.reason;
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'aborted' : String(reason);
  return new Error(`${what} was cancelled: ${why}`);
}

// An in-process helper for embedding the provisioner in a Node program. Its return value is
// serialised to JSON and validated by the same parser as a helper's stdout, so a function helper
// cannot get away with anything a program could not (e.g. a number in `configuration`), and the
// same time limit applies; on timeout or abort its AbortSignal fires so it can stop its work.
import { performance } from 'node:perf_hooks';
import {
  HelperError,
  HelperReplyError,
  publicReasonForReplyError,
  reasonForReplyError,
  type HelperErrorKind,
} from './errors.js';
import { quoteExcerpt, requestSecrets } from './output.js';
import { DEFAULT_HELPER_TIMEOUT_MS } from './process-helper.js';
import { parseHelperReply } from './reply.js';
import type { HelperFunction, HelperRequest, HelperResult, HelperRunOptions, HelperRunner } from './types.js';
import { errorText } from '../../util/values.js';
import { afterPendingIo } from '../../util/io-timer.js';
import { makeRedactor, type Redactor } from '../../util/redact.js';

/** Builds a run's error: `publicReason` when the reason quotes what the function threw or returned. */
type ErrorMaker = (kind: HelperErrorKind, reason: string, cause?: unknown, publicReason?: string) => HelperError;

/** What was thrown, by its class only: its message is the embedding program's text. */
function thrownKind(err: unknown): string {
  if (err instanceof Error) return `an error (${err.name})`;
  return err === null ? 'null' : `a ${typeof err}`;
}

export interface FunctionHelperOptions {
  /** limit per call; default 10 000 ms */
  readonly timeoutMs?: number;
  /** named in errors as `function <name>`; default the function's own name */
  readonly name?: string;
}

export class FunctionHelper implements HelperRunner {
  readonly #timeoutMs: number;
  readonly #label: string;
  readonly #active = new Set<AbortController>();
  #closed = false;

  readonly #fn: HelperFunction;

  constructor(fn: HelperFunction, options: FunctionHelperOptions = {}) {
    this.#fn = fn;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_HELPER_TIMEOUT_MS;
    this.#label = `function ${options.name ?? (fn.name || 'anonymous')}`;
  }

  run(req: HelperRequest, opts: HelperRunOptions): Promise<HelperResult> {
    const redact = makeRedactor(requestSecrets(req));
    const fail = (kind: HelperErrorKind, reason: string, cause?: unknown): HelperError =>
      new HelperError({ kind, helper: this.#label, identity: opts.identity, reason, cause, redact, durationMs: 0 });
    if (this.#closed) return Promise.reject(fail('aborted', 'the helper runner is closed'));
    if (opts.signal?.aborted === true)
      return Promise.reject(fail('aborted', 'aborted by the caller before the helper started'));

    const controller = new AbortController();
    this.#active.add(controller);
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    const error: ErrorMaker = (kind, reason, cause, publicReason) =>
      new HelperError({
        kind,
        helper: this.#label,
        identity: opts.identity,
        reason,
        ...(publicReason !== undefined ? { publicReason } : {}),
        cause,
        redact,
        durationMs: elapsed(),
      });

    return new Promise<HelperResult>((resolve, reject) => {
      let settled = false;
      const settle = (outcome: HelperResult | HelperError): void => {
        if (settled) return;
        settled = true;
        timer.cancel();
        opts.signal?.removeEventListener('abort', onAbort);
        controller.signal.removeEventListener('abort', onClose);
        this.#active.delete(controller);
        if (outcome instanceof HelperError) reject(outcome);
        else resolve(outcome);
      };
      const stop = (kind: HelperErrorKind, reason: string): void => {
        if (settled) return;
        settle(error(kind, reason));
        controller.abort(new Error(reason));
      };
      // what the function waited for and came in time while this loop was busy is read first
      const timer = afterPendingIo(this.#timeoutMs, () => stop('timeout', `timed out after ${this.#timeoutMs} ms`));
      const onAbort = (): void => stop('aborted', 'aborted by the caller');
      // close() aborts the controller directly.
      const onClose = (): void => settle(error('aborted', 'the helper runner was closed'));
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      controller.signal.addEventListener('abort', onClose, { once: true });

      Promise.resolve()
        .then(() => this.#fn(req, { signal: controller.signal }))
        .then(
          (value) => settle(this.#validate(value, error, redact, elapsed)),
          (err: unknown) =>
            settle(
              error(
                'threw',
                `threw ${errorText(err)}`,
                err,
                `threw ${thrownKind(err)}; what it said is in the log at debug level`,
              ),
            ),
        );
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const controller of this.#active) controller.abort(new Error('the helper runner was closed'));
  }

  #validate(value: unknown, error: ErrorMaker, redact: Redactor, elapsed: () => number): HelperResult | HelperError {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch (err) {
      return error(
        'invalid-reply',
        `returned a value that cannot be serialised to JSON: ${errorText(err)}`,
        err,
        'returned a value that cannot be serialised to JSON',
      );
    }
    if (json === undefined)
      return error('empty', `returned ${value === undefined ? 'undefined' : typeof value} instead of a reply object`);
    try {
      return { reply: parseHelperReply(json), stderr: '', durationMs: elapsed() };
    } catch (err) {
      if (err instanceof HelperReplyError) {
        return error(
          err.kind,
          `${reasonForReplyError(err)}; returned: ${quoteExcerpt(redact(json))}`,
          err,
          publicReasonForReplyError(err),
        );
      }
      throw err;
    }
  }
}

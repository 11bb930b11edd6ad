// Errors of a helper run. Every message names the helper program and the node, states the reason,
// and quotes the start of what the helper printed, so the log line alone explains the failure.
import { quoteExcerpt } from './output.js';
import { ProvisionerError } from '../../util/errors.js';

export type HelperErrorKind =
  /** the program could not be started (missing, not executable, bad command line) */
  | 'spawn'
  /** no reply within the time limit; the process group was killed */
  | 'timeout'
  /** exited with a non-zero status (any output is discarded, as upstream) */
  | 'exit'
  /** killed by a signal it did not get from us */
  | 'signal'
  /** exited 0 without printing anything on stdout */
  | 'empty'
  /** stdout is not one JSON document */
  | 'invalid-json'
  /** JSON of the wrong shape, e.g. a number in `configuration` */
  | 'invalid-reply'
  /** stdout exceeded the output cap; the process group was killed */
  | 'too-large'
  /** the caller aborted the run, or the runner was closed */
  | 'aborted'
  /** an in-process helper function threw or rejected */
  | 'threw';

/** The `helper` setting cannot be split into a program and arguments (upstream texts). */
export class HelperCommandError extends ProvisionerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Why parseHelperReply rejected a reply; runners turn it into a HelperError. */
export class HelperReplyError extends ProvisionerError {
  readonly kind: 'empty' | 'invalid-json' | 'invalid-reply';
  /** the reason without the "helper reply is …" prefix */
  readonly detail: string;

  constructor(kind: HelperReplyError['kind'], detail: string) {
    super(replyErrorMessage(kind, detail));
    this.kind = kind;
    this.detail = detail;
  }
}

function replyErrorMessage(kind: HelperReplyError['kind'], detail: string): string {
  switch (kind) {
    case 'empty':
      return `helper reply is empty: ${detail}`;
    case 'invalid-json':
      return `helper reply is not valid JSON: ${detail}`;
    case 'invalid-reply':
      return `helper reply is invalid: ${detail}`;
  }
}

export interface HelperErrorInit {
  readonly kind: HelperErrorKind;
  /** the program (argv[0], never its arguments, which may hold secrets) or `function <name>` */
  readonly helper: string;
  readonly identity: string;
  readonly reason: string;
  /** what the helper printed, already bounded and redacted; undefined when it never ran */
  readonly output?: { readonly stdout: string; readonly stderr: string };
  readonly exitCode?: number | null;
  readonly signal?: string | null;
  readonly durationMs?: number;
  readonly cause?: unknown;
  /** strings to blank out of the message (provisioning token, broker password) */
  readonly redact?: (text: string) => string;
}

export class HelperError extends ProvisionerError {
  readonly kind: HelperErrorKind;
  readonly helper: string;
  readonly identity: string;
  readonly reason: string;
  /** bounded, redacted stdout (empty when none) */
  readonly stdout: string;
  /** bounded, redacted stderr for the caller to log (empty when none) */
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly durationMs: number;

  constructor(init: HelperErrorInit) {
    const redact = init.redact ?? ((t: string) => t);
    const printed =
      init.output === undefined
        ? ''
        : `; stdout: ${quoteExcerpt(init.output.stdout)}; stderr: ${quoteExcerpt(init.output.stderr)}`;
    super(redact(`helper ${init.helper} failed for ${init.identity}: ${init.reason}${printed}`), { cause: init.cause });
    this.kind = init.kind;
    this.helper = init.helper;
    this.identity = init.identity;
    this.reason = redact(init.reason);
    this.stdout = init.output?.stdout ?? '';
    this.stderr = init.output?.stderr ?? '';
    this.exitCode = init.exitCode ?? null;
    this.signal = init.signal ?? null;
    this.durationMs = init.durationMs ?? 0;
  }
}

/** Maps a reply validation failure to the run error kind and reason text. */
export function reasonForReplyError(err: HelperReplyError): string {
  switch (err.kind) {
    case 'empty':
      return `printed nothing on stdout (${err.detail})`;
    case 'invalid-json':
      return `stdout is not valid JSON: ${err.detail}`;
    case 'invalid-reply':
      return `reply is invalid: ${err.detail}`;
  }
}

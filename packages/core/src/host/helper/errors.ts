// Errors of a helper run. Each has two texts:
// - the message names the helper program and the node, states the reason and quotes the start of
//   what the helper printed, redacted (redact.ts), so the log line alone explains the failure; it
//   goes to the log at debug level and to `helper test`;
// - the public message says the same in the provisioner's own words only (what went wrong, exit
//   status, signal, time limit, byte counts, where the JSON broke), never a byte the helper
//   printed: it is what the monitor port and the node history show.
import { quoteExcerpt } from './output.js';
import { ProvisionerError } from '../../util/errors.js';
import { redactSecrets, type Redactor } from '../../util/redact.js';

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

/** Why parseHelperReply or a reply check rejected a reply; runners turn it into a HelperError. */
export class HelperReplyError extends ProvisionerError {
  readonly kind: 'empty' | 'invalid-json' | 'invalid-reply';
  /** the reason without the "helper reply is …" prefix; may quote the reply */
  readonly detail: string;
  /** the same in the provisioner's words only: no value (nor unusual key name) of the reply */
  readonly publicDetail: string;

  /** `detail` is redacted here; `publicDetail` defaults to it, for reasons that quote nothing of the reply */
  constructor(kind: HelperReplyError['kind'], detail: string, publicDetail?: string) {
    const redacted = redactSecrets(detail);
    const shown = publicDetail ?? redacted;
    super(replyErrorMessage(kind, redacted), { publicMessage: replyErrorMessage(kind, shown) });
    this.kind = kind;
    this.detail = redacted;
    this.publicDetail = shown;
  }
}

/** A key a helper chose, as the public wording may name it: a plain setting or file name, else only its length. */
export function publicKeyName(name: string): string {
  return /^[A-Za-z0-9_.-]{1,100}$/.test(name) ? JSON.stringify(name) : `<a key of ${name.length} characters>`;
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

/** What a helper printed, bounded, exactly as printed (HelperError redacts it). */
export interface HelperOutput {
  readonly stdout: string;
  readonly stderr: string;
  /** bytes printed in all (also those beyond the bound); default: the length of the text */
  readonly stdoutBytes?: number;
  readonly stderrBytes?: number;
}

export interface HelperErrorInit {
  readonly kind: HelperErrorKind;
  /** the program (argv[0], never its arguments, which may hold secrets) or `function <name>` */
  readonly helper: string;
  readonly identity: string;
  /** why, in full; may quote what the helper printed or threw (it is redacted here) */
  readonly reason: string;
  /** why, in the provisioner's words only; default `reason`, so pass one whenever `reason` quotes the helper */
  readonly publicReason?: string;
  /** what the helper printed, unredacted; undefined when it never ran */
  readonly output?: HelperOutput;
  readonly exitCode?: number | null;
  readonly signal?: string | null;
  readonly durationMs?: number;
  readonly cause?: unknown;
  /** blanks the secrets out of foreign text (the request's own secrets included); default: no redaction */
  readonly redact?: Redactor;
}

const bytes = (n: number): string => `${n} ${n === 1 ? 'byte' : 'bytes'}`;

export class HelperError extends ProvisionerError {
  readonly kind: HelperErrorKind;
  readonly helper: string;
  readonly identity: string;
  /** the reason, redacted */
  readonly reason: string;
  /** the reason in the provisioner's words only */
  readonly publicReason: string;
  /** bounded, redacted stdout (empty when none) */
  readonly stdout: string;
  /** bounded, redacted stderr for the caller to log (empty when none) */
  readonly stderr: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly durationMs: number;
  readonly #output: HelperOutput | undefined;

  constructor(init: HelperErrorInit) {
    const redact = init.redact ?? ((t: string) => t);
    const reason = redact(init.reason);
    const stdout = init.output === undefined ? '' : redact(init.output.stdout);
    const stderr = init.output === undefined ? '' : redact(init.output.stderr);
    const printed =
      init.output === undefined ? '' : `; stdout: ${quoteExcerpt(stdout)}; stderr: ${quoteExcerpt(stderr)}`;
    const publicReason = init.publicReason ?? init.reason;
    super(`helper ${init.helper} failed for ${init.identity}: ${reason}${printed}`, {
      cause: init.cause,
      publicMessage: `helper ${init.helper} failed for ${init.identity}: ${publicReason}${printedSizes(init.output)}`,
    });
    this.kind = init.kind;
    this.helper = init.helper;
    this.identity = init.identity;
    this.reason = reason;
    this.publicReason = publicReason;
    this.stdout = stdout;
    this.stderr = stderr;
    this.exitCode = init.exitCode ?? null;
    this.signal = init.signal ?? null;
    this.durationMs = init.durationMs ?? 0;
    this.#output = init.output;
  }

  /**
   * What the helper printed, bounded but not redacted: for `choria-provisioner helper test`,
   * whose operator asked to see it. Never log it, never serve it.
   */
  unredactedOutput(): { readonly stdout: string; readonly stderr: string } | undefined {
    return this.#output === undefined ? undefined : { stdout: this.#output.stdout, stderr: this.#output.stderr };
  }
}

/** How much the helper printed, for the public message: sizes only, and where the text is. */
function printedSizes(output: HelperOutput | undefined): string {
  if (output === undefined) return '';
  const out = output.stdoutBytes ?? Buffer.byteLength(output.stdout, 'utf8');
  const err = output.stderrBytes ?? Buffer.byteLength(output.stderr, 'utf8');
  if (out === 0 && err === 0) return '';
  return `; it printed ${bytes(out)} on stdout and ${bytes(err)} on stderr (the text is in the log at debug level)`;
}

/** The run error's reason for a reply validation failure (may quote the reply). */
export function reasonForReplyError(err: HelperReplyError): string {
  return replyReason(err.kind, err.detail);
}

/** The same in the provisioner's words only. */
export function publicReasonForReplyError(err: HelperReplyError): string {
  return replyReason(err.kind, err.publicDetail);
}

function replyReason(kind: HelperReplyError['kind'], detail: string): string {
  switch (kind) {
    case 'empty':
      return `printed nothing on stdout (${detail})`;
    case 'invalid-json':
      return `stdout is not valid JSON: ${detail}`;
    case 'invalid-reply':
      return `reply is invalid: ${detail}`;
  }
}

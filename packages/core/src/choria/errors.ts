// Error classes of the Choria client. Each names the thing and the reason; none carries secrets
// (tokens, seeds, keys and RPC input values are never copied into a message, and a node's status
// message is redacted before it is).
import { ProvisionerError } from '../util/errors.js';
import { redactSecrets } from '../util/redact.js';

/** Base of every error raised by the Choria client. */
export class ChoriaError extends ProvisionerError {}

/** A message on the wire could not be decoded or failed a protocol rule. */
export class ProtocolError extends ChoriaError {}

/** Connecting to the broker failed (or no broker was configured). */
export class ConnectError extends ChoriaError {}

/** Security material (certificate, key, JWT, seed) could not be loaded or used. */
export class SecurityError extends ChoriaError {}

/** Base of every failure of `ChoriaClient.rpc()` and `discover()`. */
export class RpcError extends ChoriaError {}

/** Request inputs do not satisfy the agent's DDL; nothing was published. */
export class RpcInputError extends RpcError {
  constructor(
    readonly problems: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(problems.join('; '), options);
  }
}

/** No reply from the target within the request timeout. */
export class RpcTimeoutError extends RpcError {
  constructor(
    message: string,
    readonly timeoutMs: number,
    readonly responses: number,
  ) {
    super(message);
  }
}

/**
 * The broker connection dropped while the request was outstanding and no reply came after it was
 * back: the request may or may not have reached the target, and the target may have acted on it.
 */
export class RpcReplyLostError extends RpcError {}

/**
 * Whether a request ended without any reply (it timed out, or its reply was lost with the
 * broker): the target may not have heard it, or may have acted and answered into the void. Any
 * other failure of a request is an answer of sorts (a refusal, an abort, a closed client).
 */
export function noReplyCame(err: unknown): boolean {
  return err instanceof RpcTimeoutError || err instanceof RpcReplyLostError;
}

/**
 * The broker cannot carry the request (its subject is too long, or it is larger than max_payload): nothing was sent.
 */
export class RpcUnsendableError extends RpcError {}

/** The caller's AbortSignal fired while the request was outstanding. */
export class RpcAbortError extends RpcError {
  constructor(
    message: string,
    readonly reason: unknown,
  ) {
    super(message, { cause: reason });
  }
}

/** The target answered, but the number of responses was not exactly one. */
export class RpcResponseCountError extends RpcError {
  constructor(
    readonly responses: number,
    readonly identity: string,
  ) {
    super(`received ${responses} responses while expecting a response from ${identity}`);
  }
}

/** The client was closed while the request was outstanding. */
export class ClientClosedError extends RpcError {}

export interface RpcStatusDetails {
  readonly sender: string;
  readonly action: string;
  readonly statuscode: number;
  readonly statusmsg: string;
  readonly data: unknown;
  readonly requestId: string;
}

/** A double-quoted part (also cut short), or a single-quoted one that is not an apostrophe. */
const QUOTED = /"(?:[^"\\]|\\.)*(?:"|$)|(?<![A-Za-z])'[^'\n]*'(?![A-Za-z])/g;

/**
 * A node's status message as the public message may show it: redacted, and without what it quotes
 * (go-choria quotes the input it refuses, e.g. `parsing "…": invalid syntax` for a setting of the
 * configuration the helper chose, or a policy file name): that is the helper's text echoed.
 */
export function publicStatusMessage(statusmsg: string): string {
  return redactSecrets(statusmsg).replace(QUOTED, (quoted) => (quoted.startsWith("'") ? "'…'" : '"…"'));
}

/** The target replied with a non-zero MCORPC status code. */
export class RpcStatusError extends RpcError {
  /** the reply as received (statusmsg unredacted); gen25519 can return data together with an Aborted status */
  readonly reply: RpcStatusDetails;

  constructor(reply: RpcStatusDetails) {
    const said = (statusmsg: string): string =>
      `invalid response from ${reply.sender}: ${statusmsg} (${reply.statuscode})`;
    super(said(redactSecrets(reply.statusmsg)), { publicMessage: said(publicStatusMessage(reply.statusmsg)) });
    this.reply = reply;
  }
}

/** Status 1: the action refused or failed. */
export class RpcAbortedError extends RpcStatusError {}
/** Status 1 with `Could not obtain provisioning lock`: another provisioner holds the node's lock. */
export class ProvisioningLockError extends RpcAbortedError {}
/** Status 2: no such action. */
export class RpcUnknownActionError extends RpcStatusError {}
/** Status 3: a required input was missing. */
export class RpcMissingDataError extends RpcStatusError {}
/** Status 4: the request or its data could not be decoded. */
export class RpcInvalidDataError extends RpcStatusError {}
/** Status 5 (and any code outside 1..5): generic failure. */
export class RpcUnknownError extends RpcStatusError {}

/**
 * Whether the same request, sent again, must meet the same end, so a step ends at its first such
 * failure instead of trying again: the node has no such action, or its action aborted (go-choria's
 * status 1: it looked at the request and refused it, or failed part way, and meets the same state
 * again); the request breaks the agent's DDL or the broker cannot carry it (nothing was sent); or
 * the reply could not be read (a node answers the same request the same way).
 */
export function repeatingCannotHelp(err: unknown): boolean {
  return (
    err instanceof RpcUnknownActionError ||
    err instanceof RpcAbortedError ||
    err instanceof RpcInputError ||
    err instanceof RpcUnsendableError ||
    err instanceof ProtocolError
  );
}

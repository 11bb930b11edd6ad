// One node's history as the instances of a site share it: what happened to it, by whom and when,
// and what that means for its next attempt (back-off, quarantine). Stored as JSON with ISO times,
// so an operator can read a key with `nats kv get`; carried in memory as an immutable record with
// epoch milliseconds. Every stored value is parsed here before it is believed.
import { HELPER_ASKED, OUTCOMES, type Outcome } from '../../host/types.js';
import { ProvisionerError } from '../../util/errors.js';
import { maskKnownSecrets } from '../../util/redact.js';

export const RECORD_FORMAT = 'choria-provisioner:node:1';

/** Longer error texts are cut to this many characters: a record stays well under the bucket's value limit. */
export const MAX_ERROR_CHARS = 400;

export interface NodeRecord {
  readonly identity: string;
  /** when a provisioner of the site first found the node (its first attempt's discovery time) */
  readonly firstSeen: number;
  /** attempts that ended, over the record's lifetime */
  readonly attempts: number;
  /** failed attempts in a row (back-off and quarantine) */
  readonly failures: number;
  /** the last attempt's outcome; undefined while the first attempt has not ended (see `sending`) */
  readonly outcome: Outcome | undefined;
  /** the last attempt's message, unless it provisioned the node */
  readonly error: string | undefined;
  /** the Choria identity of the provisioner that made the last attempt */
  readonly instance: string;
  /** when the last attempt ended, and how long it took */
  readonly attemptAt: number;
  readonly durationMs: number;
  readonly provisionedAt: number | undefined;
  /** not tried again before this time; undefined: no back-off */
  readonly notBefore: number | undefined;
  /** quarantined since; undefined: not quarantined */
  readonly quarantinedAt: number | undefined;
  /**
   * configure was sent to the node (recorded before it went out) and no attempt has seen it
   * restart since: whoever takes the node next restarts it first (HostJob.configuredAt)
   */
  readonly configuredAt: number | undefined;
  /** restart was sent to the node (recorded before it went out): it may be in its restart window */
  readonly restartSentAt: number | undefined;
  /**
   * what the configure recorded in `configuredAt` gives the node that expires, and why it could
   * not be renewed: taken over by the success that restarts it (it may be another attempt's)
   */
  readonly configuredExpireAt?: number | undefined;
  readonly configuredNotRenewable?: string | undefined;
  /** the record's last change (for its age); which of two versions is newer is the bucket's revision */
  readonly updatedAt: number;
  /** successful provisionings of the node recorded so far (undefined in records of earlier versions: 0) */
  readonly generation?: number | undefined;
  /**
   * active/active: the provisioner process (identity#incarnation) whose attempt holds the node, and
   * when it claimed it (node-claims.ts: a claim's life is read on each process's own clock)
   */
  readonly claimedBy?: string | undefined;
  readonly claimedAt?: number | undefined;
  /** when what the last provisioning gave the node (certificate, server JWT) stops being valid */
  readonly credentialsExpireAt?: number | undefined;
  /** why `reprovision` would strand the node; undefined when it can be renewed or has nothing to renew */
  readonly notRenewable?: string | undefined;
  /** a renewal sent `reprovision` (recorded before it went out), and which instance: until the node is provisioned */
  readonly renewalSentAt?: number | undefined;
  readonly renewalSentBy?: string | undefined;
  /** the renewal failed, and why (go-choria's reason, or not back in provisioning in time) */
  readonly renewalError?: string | undefined;
}

export class HistoryRecordError extends ProvisionerError {}

const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

/** The stored form; undefined fields are left out. */
export function encodeRecord(r: NodeRecord): Uint8Array {
  const stored = {
    format: RECORD_FORMAT,
    identity: r.identity,
    firstSeen: iso(r.firstSeen),
    attempts: r.attempts,
    failures: r.failures,
    outcome: r.outcome,
    error: r.error,
    instance: r.instance,
    attemptAt: iso(r.attemptAt),
    durationMs: r.durationMs,
    provisionedAt: iso(r.provisionedAt),
    notBefore: iso(r.notBefore),
    quarantinedAt: iso(r.quarantinedAt),
    configuredAt: iso(r.configuredAt),
    restartSentAt: iso(r.restartSentAt),
    configuredExpireAt: iso(r.configuredExpireAt),
    configuredNotRenewable: r.configuredNotRenewable,
    updatedAt: iso(r.updatedAt),
    generation: r.generation,
    claimedBy: r.claimedBy,
    claimedAt: iso(r.claimedAt),
    credentialsExpireAt: iso(r.credentialsExpireAt),
    notRenewable: r.notRenewable,
    renewalSentAt: iso(r.renewalSentAt),
    renewalSentBy: r.renewalSentBy,
    renewalError: r.renewalError,
  };
  return new TextEncoder().encode(JSON.stringify(stored));
}

/** Cuts an error text to MAX_ERROR_CHARS (marking the cut). */
export function boundedError(text: string | undefined): string | undefined {
  if (text === undefined || text.length <= MAX_ERROR_CHARS) return text;
  return `${text.slice(0, MAX_ERROR_CHARS - 1)}…`;
}

/**
 * A stored error as this version shows it. Earlier versions stored a failed helper's full message,
 * which quotes what the helper printed (`…; stdout: "…"; stderr: "…"`), and the `msg` of a defer
 * or shutdown; another instance of the site may still run one during an upgrade. The quote and
 * the `msg` are dropped, and PEM blocks, JWTs and nkey seeds are blanked, before the text
 * reaches the monitor port.
 */
export function storedErrorShown(text: string | undefined, outcome?: Outcome): string | undefined {
  if (text === undefined) return undefined;
  const asked = outcome === 'deferred' || outcome === 'shutdown' ? HELPER_ASKED[outcome] : undefined;
  if (asked !== undefined && !text.startsWith(asked)) return `${asked} (its message is not shown)`;
  const quoted = text.indexOf('; stdout: "');
  const kept = quoted < 0 ? text : `${text.slice(0, quoted)} (what the helper printed is not shown)`;
  return maskKnownSecrets(kept);
}

const OUTCOME_SET: ReadonlySet<string> = new Set(OUTCOMES);

/** Parses a stored value; throws HistoryRecordError naming the first problem. */
export function decodeRecord(bytes: Uint8Array): NodeRecord {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch (err) {
    throw new HistoryRecordError(`not JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new HistoryRecordError('not a JSON object');
  const o = value as Record<string, unknown>;
  if (o['format'] !== RECORD_FORMAT)
    throw new HistoryRecordError(`format ${JSON.stringify(o['format'])} is not ${RECORD_FORMAT}`);
  const text = (key: string, required: boolean): string | undefined => {
    const v = o[key];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || (required && v === ''))
      throw new HistoryRecordError(`${key} must be a${required ? ' non-empty' : ''} string`);
    return v;
  };
  const count = (key: string): number => {
    const v = o[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw new HistoryRecordError(`${key} must be a whole number of at least 0`);
    return v;
  };
  const time = (key: string, required: boolean): number | undefined => {
    const v = text(key, required);
    if (v === undefined) return undefined;
    const ms = Date.parse(v);
    if (Number.isNaN(ms)) throw new HistoryRecordError(`${key} ${JSON.stringify(v)} is not a time`);
    return ms;
  };
  // a record written before the node's first attempt ended (a configure or restart about to be sent) has no outcome yet
  const outcome = text('outcome', false);
  if (outcome !== undefined && !OUTCOME_SET.has(outcome))
    throw new HistoryRecordError(`outcome ${JSON.stringify(outcome)} is not one of ${OUTCOMES.join(', ')}`);
  return {
    identity: text('identity', true) as string,
    firstSeen: time('firstSeen', true) as number,
    attempts: count('attempts'),
    failures: count('failures'),
    outcome: outcome as Outcome | undefined,
    error: boundedError(storedErrorShown(text('error', false), outcome as Outcome | undefined)),
    instance: text('instance', true) as string,
    attemptAt: time('attemptAt', true) as number,
    durationMs: count('durationMs'),
    provisionedAt: time('provisionedAt', false),
    notBefore: time('notBefore', false),
    quarantinedAt: time('quarantinedAt', false),
    configuredAt: time('configuredAt', false),
    restartSentAt: time('restartSentAt', false),
    configuredExpireAt: time('configuredExpireAt', false),
    configuredNotRenewable: boundedError(maskKnownSecrets(text('configuredNotRenewable', false) ?? '') || undefined),
    updatedAt: time('updatedAt', true) as number,
    generation: o['generation'] === undefined ? undefined : count('generation'),
    claimedBy: text('claimedBy', false),
    claimedAt: time('claimedAt', false),
    credentialsExpireAt: time('credentialsExpireAt', false),
    notRenewable: boundedError(maskKnownSecrets(text('notRenewable', false) ?? '') || undefined),
    renewalSentAt: time('renewalSentAt', false),
    renewalSentBy: text('renewalSentBy', false),
    renewalError: boundedError(maskKnownSecrets(text('renewalError', false) ?? '') || undefined),
  };
}

/** A renewal sent the node `reprovision` and it has not been provisioned again (nor failed) since. */
export function isRenewing(r: NodeRecord | undefined): boolean {
  return r?.renewalSentAt !== undefined && r.renewalError === undefined;
}

/** The record of a node before anything happened to it: found at `at`, no attempt ended yet. */
export function emptyRecord(identity: string, at: number, instance: string): NodeRecord {
  return {
    identity,
    firstSeen: at,
    attempts: 0,
    failures: 0,
    outcome: undefined,
    error: undefined,
    instance,
    attemptAt: at,
    durationMs: 0,
    provisionedAt: undefined,
    notBefore: undefined,
    quarantinedAt: undefined,
    configuredAt: undefined,
    restartSentAt: undefined,
    updatedAt: at,
  };
}

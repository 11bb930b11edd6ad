// The three election operations on the Choria Streams KV bucket as plain core-NATS request/reply.
// Written by hand rather than with the nats JetStream KV view because the
// provisioning account can reach only the stream-info API and the one election key: the client's KV
// helpers probe other APIs (account info, direct get) that are not imported there and fail with
// "no responders", and they hide which request failed.
import { ErrorCode, NatsError, headers, type Msg, type MsgHdrs, type NatsConnection } from 'nats';
import { formatMs } from '../../util/duration.js';
import { parseForeignJson } from '../../util/json-syntax.js';
import { errorText, isPlainObject as isRecord } from '../../util/values.js';
import { ProvisionerError } from '../../util/errors.js';

/** The JetStream API prefix Choria Streams is imported under in the provisioning account. */
export const CHORIA_STREAMS_API_PREFIX = 'choria.streams';
/** The API prefix of an account that has JetStream itself. */
export const PLAIN_JETSTREAM_API_PREFIX = '$JS.API';
export const DEFAULT_ELECTION_BUCKET = 'CHORIA_LEADER_ELECTION';
export const DEFAULT_ELECTION_KEY = 'provisioner';
export const DEFAULT_KV_REQUEST_TIMEOUT_MS = 2_000;

const NO_RESPONDERS_BUCKET =
  'no responders: is Choria Streams enabled and the election bucket imported into this account?';

export interface KvBucketRef {
  /** JetStream API prefix, default `choria.streams`; `$JS.API` for an account with JetStream */
  apiPrefix?: string;
  /** KV bucket name, default CHORIA_LEADER_ELECTION */
  bucket?: string;
  /** request timeout, default 2 s */
  timeoutMs?: number;
}

export interface KvKeyRef extends KvBucketRef {
  /** key inside the bucket, default `provisioner` */
  key?: string;
}

export type KvFailureKind =
  | 'stream-not-found'
  | 'no-responders'
  | 'timeout'
  | 'api-error'
  | 'invalid-reply'
  | 'invalid-bucket'
  | 'request-failed';

/** Any failure of a bucket-status, create or update request. */
export class ElectionKvError extends ProvisionerError {
  readonly kind: KvFailureKind;
  readonly subject: string;
  /** JetStream `err_code` when the server answered with an API error */
  readonly errCode: number | undefined;

  constructor(kind: KvFailureKind, subject: string, message: string, errCode?: number) {
    super(message);
    this.kind = kind;
    this.subject = subject;
    this.errCode = errCode;
  }
}

const BUCKET_NAME = /^[a-zA-Z0-9_-]+$/;
const KEY_NAME = /^[-/=.\w]+$/;
const SUBJECT_TOKENS = /^[^\s*>]+$/;

interface ResolvedKey {
  apiPrefix: string;
  bucket: string;
  key: string;
  timeoutMs: number;
}

function resolveRef(ref: KvKeyRef): ResolvedKey {
  const apiPrefix = (ref.apiPrefix ?? CHORIA_STREAMS_API_PREFIX).replace(/\.+$/, '');
  const bucket = ref.bucket ?? DEFAULT_ELECTION_BUCKET;
  const key = ref.key ?? DEFAULT_ELECTION_KEY;
  const timeoutMs = ref.timeoutMs ?? DEFAULT_KV_REQUEST_TIMEOUT_MS;
  if (apiPrefix === '' || !SUBJECT_TOKENS.test(apiPrefix) || apiPrefix.startsWith('.') || apiPrefix.includes('..')) {
    throw new Error(
      `invalid JetStream API prefix ${JSON.stringify(ref.apiPrefix)}: must be a subject without wildcards or spaces`,
    );
  }
  if (!BUCKET_NAME.test(bucket))
    throw new Error(`invalid KV bucket name ${JSON.stringify(bucket)}: only letters, digits, _ and - are allowed`);
  if (!KEY_NAME.test(key) || key.startsWith('.') || key.endsWith('.')) {
    throw new Error(`invalid KV key ${JSON.stringify(key)}: letters, digits, _ - / = and inner dots only`);
  }
  if (!Number.isFinite(timeoutMs) || timeoutMs < 1)
    throw new Error(`invalid request timeout ${timeoutMs} ms for the election bucket ${bucket}`);
  return { apiPrefix, bucket, key, timeoutMs };
}

/** `<prefix>.STREAM.INFO.KV_<bucket>` */
export function streamInfoSubject(ref: KvBucketRef = {}): string {
  const r = resolveRef(ref);
  return `${r.apiPrefix}.STREAM.INFO.KV_${r.bucket}`;
}

/**
 * The subject a KV write goes to. With the plain JetStream API (`$JS.API`) KV subjects carry no
 * prefix (`$KV.<bucket>.<key>`); with any other prefix (an imported JetStream such as Choria
 * Streams) the prefix goes in front (`choria.streams.$KV.<bucket>.<key>`), the same rule the nats
 * clients apply.
 */
export function kvKeySubject(ref: KvKeyRef = {}): string {
  const r = resolveRef(ref);
  const kv = `$KV.${r.bucket}.${r.key}`;
  return r.apiPrefix === PLAIN_JETSTREAM_API_PREFIX ? kv : `${r.apiPrefix}.${kv}`;
}

/** One request; every transport failure becomes an ElectionKvError naming what was attempted. */
async function jsonRequest(
  nc: NatsConnection,
  subject: string,
  body: string,
  hdrs: MsgHdrs | undefined,
  timeoutMs: number,
  what: string,
  noRespondersHint: string,
): Promise<Record<string, unknown>> {
  const fail = (kind: KvFailureKind, reason: string, errCode?: number): ElectionKvError =>
    new ElectionKvError(kind, subject, `could not ${what} via ${subject}: ${reason}`, errCode);
  let msg: Msg;
  try {
    msg = await nc.request(
      subject,
      new TextEncoder().encode(body),
      hdrs === undefined ? { timeout: timeoutMs } : { timeout: timeoutMs, headers: hdrs },
    );
  } catch (err) {
    if (err instanceof NatsError && err.code === ErrorCode.NoResponders) throw fail('no-responders', noRespondersHint);
    if (err instanceof NatsError && err.code === ErrorCode.Timeout)
      throw fail('timeout', `request timed out after ${formatMs(timeoutMs)}`);
    throw fail('request-failed', errorText(err));
  }
  const text = new TextDecoder().decode(msg.data);
  if (text.trim() === '') {
    const status = msg.headers?.hasError === true ? ` (status ${msg.headers.code} ${msg.headers.description})` : '';
    throw fail('invalid-reply', `empty reply${status}`);
  }
  const parsed = parseForeignJson(text, (why) => fail('invalid-reply', `reply is not JSON: ${why}`));
  if (!isRecord(parsed)) throw fail('invalid-reply', 'reply is not a JSON object');
  const apiError = parsed['error'];
  if (apiError !== undefined) {
    const e = isRecord(apiError) ? apiError : {};
    const code = typeof e['code'] === 'number' ? e['code'] : undefined;
    const errCode = typeof e['err_code'] === 'number' ? e['err_code'] : undefined;
    const description = typeof e['description'] === 'string' ? e['description'] : JSON.stringify(apiError);
    const codes = [code, errCode].filter((c) => c !== undefined).join('/');
    throw fail('api-error', `JetStream API error${codes === '' ? '' : ' ' + codes}: ${description}`, errCode);
  }
  return parsed;
}

/**
 * The bucket's TTL in milliseconds from its stream info (`config.max_age`, nanoseconds); also
 * insists on `max_msgs_per_subject >= 1` as the Go KV client does when binding.
 */
export async function bucketTtlMs(nc: NatsConnection, ref: KvBucketRef = {}): Promise<number> {
  const r = resolveRef(ref);
  const subject = streamInfoSubject(r);
  const what = `get the status of election bucket ${r.bucket}`;
  let info: Record<string, unknown>;
  try {
    info = await jsonRequest(nc, subject, '', undefined, r.timeoutMs, what, NO_RESPONDERS_BUCKET);
  } catch (err) {
    if (err instanceof ElectionKvError && err.kind === 'api-error' && err.errCode === 10059) {
      throw new ElectionKvError(
        'stream-not-found',
        subject,
        `could not ${what} via ${subject}: stream not found (JetStream API error 404/10059): ` +
          `the stream KV_${r.bucket} does not exist; ` +
          'the Choria Broker creates it when Choria Streams is enabled, up to about 70 s after it starts',
        10059,
      );
    }
    throw err;
  }
  const bad = (reason: string): ElectionKvError =>
    new ElectionKvError('invalid-bucket', subject, `could not ${what} via ${subject}: ${reason}`);
  const config = info['config'];
  if (!isRecord(config)) throw bad('stream info has no config object');
  const maxAge = config['max_age'];
  if (typeof maxAge !== 'number' || !Number.isFinite(maxAge) || maxAge < 0)
    throw bad(`stream info has an invalid config.max_age ${JSON.stringify(maxAge)}`);
  const perSubject = config['max_msgs_per_subject'];
  if (typeof perSubject !== 'number' || perSubject < 1) {
    throw bad(
      `stream KV_${r.bucket} is not a KV bucket: config.max_msgs_per_subject is ${JSON.stringify(perSubject)}, ` +
        `must be >= 1`,
    );
  }
  return maxAge / 1_000_000;
}

function parseAck(reply: Record<string, unknown>, subject: string, what: string): number {
  const seq = reply['seq'];
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
    throw new ElectionKvError(
      'invalid-reply',
      subject,
      `could not ${what} via ${subject}: publish acknowledgement has no valid seq (${JSON.stringify(seq)})`,
    );
  }
  return seq;
}

async function writeKey(
  nc: NatsConnection,
  ref: KvKeyRef,
  value: string,
  expectedLastSeq: number,
  what: string,
): Promise<number> {
  const r = resolveRef(ref);
  const subject = kvKeySubject(r);
  const hdrs = headers();
  hdrs.set('Nats-Expected-Last-Subject-Sequence', String(expectedLastSeq));
  const hint =
    `no responders: is Choria Streams enabled and the election key ${r.key} of bucket ${r.bucket} ` +
    `imported into this account?`;
  const reply = await jsonRequest(nc, subject, value, hdrs, r.timeoutMs, what, hint);
  return parseAck(reply, subject, what);
}

/**
 * Campaign: writes `value` only if the key holds nothing (expected last subject sequence 0).
 * Resolves with the new revision (stream sequence); rejects with ElectionKvError on any failure,
 * including "wrong last sequence" when another instance holds the key.
 */
export async function create(nc: NatsConnection, ref: KvKeyRef, value: string): Promise<number> {
  const r = resolveRef(ref);
  return await writeKey(nc, r, value, 0, `create key ${r.key} in election bucket ${r.bucket}`);
}

/** Maintain: writes `value` only if the key's last revision is still `lastSeq`; resolves with the new revision. */
export async function update(nc: NatsConnection, ref: KvKeyRef, value: string, lastSeq: number): Promise<number> {
  const r = resolveRef(ref);
  if (!Number.isSafeInteger(lastSeq) || lastSeq < 1)
    throw new Error(`invalid last revision ${lastSeq} for key ${r.key} in election bucket ${r.bucket}`);
  return await writeKey(
    nc,
    r,
    value,
    lastSeq,
    `update key ${r.key} at revision ${lastSeq} in election bucket ${r.bucket}`,
  );
}

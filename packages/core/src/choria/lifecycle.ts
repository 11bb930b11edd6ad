// Choria lifecycle events: parsing both wire formats and encoding our own.
import { randomUUID } from 'node:crypto';
import { ChoriaError } from './errors.js';
import { bytesToText, isJsonObject, isStrictBase64, type JsonObject } from './protocol/encoding.js';
import { nodeIdentity, type NodeIdentity } from './identity.js';
import { parseForeignJson } from '../util/json-syntax.js';

export const LIFECYCLE_TYPES = ['startup', 'shutdown', 'provisioned', 'alive', 'upgraded', 'governor'] as const;
export type LifecycleType = (typeof LIFECYCLE_TYPES)[number];
export type LifecycleFormat = 'choria' | 'cloudevents';

const PROTOCOL_PREFIX = 'io.choria.lifecycle';
const CLOUDEVENT_SOURCE = 'io.choria.lifecycle';

export interface LifecycleEvent {
  readonly type: LifecycleType;
  /** `io.choria.lifecycle.v1.<type>` */
  readonly protocol: string;
  readonly id: string;
  readonly identity: string;
  readonly component: string;
  /** Unix seconds */
  readonly timestamp: number;
  readonly version?: string;
  /** upgraded events only */
  readonly newVersion?: string;
  /** the wire format it arrived in (or will be sent in) */
  readonly format: LifecycleFormat;
}

export class LifecycleEventError extends ChoriaError {
  constructor(reason: string) {
    super(`invalid lifecycle event: ${reason}`);
  }
}

function isLifecycleType(value: string): value is LifecycleType {
  return (LIFECYCLE_TYPES as readonly string[]).includes(value);
}

function stringField(
  obj: JsonObject,
  key: string,
  opts: { nonEmpty?: boolean; optional?: boolean } = {},
): string | undefined {
  const value = obj[key];
  if (value === undefined || value === null) {
    if (opts.optional === true) return undefined;
    throw new LifecycleEventError(`"${key}" is missing`);
  }
  if (typeof value !== 'string') throw new LifecycleEventError(`"${key}" must be a string`);
  if (opts.nonEmpty === true && value === '') throw new LifecycleEventError(`"${key}" must not be empty`);
  return value;
}

/** Type from the fifth token of the protocol: exactly five tokens and a known type are required. */
function typeFromProtocol(protocol: string): LifecycleType {
  const tokens = protocol.split('.');
  if (tokens.length !== 5 || !protocol.startsWith(`${PROTOCOL_PREFIX}.`)) {
    throw new LifecycleEventError(
      `protocol ${JSON.stringify(protocol)} is not of the form ${PROTOCOL_PREFIX}.<version>.<type>`,
    );
  }
  const type = tokens[4] ?? '';
  if (!isLifecycleType(type)) throw new LifecycleEventError(`unknown event type ${JSON.stringify(type)}`);
  return type;
}

/** An event as received: its identity passed the identity rule. */
export type ReceivedLifecycleEvent = LifecycleEvent & { readonly identity: NodeIdentity };

function parseChoriaFormat(obj: JsonObject, format: LifecycleFormat): ReceivedLifecycleEvent {
  const protocol = stringField(obj, 'protocol', { nonEmpty: true }) as string;
  const type = typeFromProtocol(protocol);
  const timestamp = obj['timestamp'];
  if (typeof timestamp !== 'number' || !Number.isInteger(timestamp))
    throw new LifecycleEventError('"timestamp" must be an integer');
  const version = stringField(obj, 'version', { optional: true });
  const newVersion = stringField(obj, 'new_version', { optional: true });
  // the identity rule (identity.ts); IdentityRefusedError names the text it refused
  const identity = nodeIdentity(stringField(obj, 'identity') as string);
  return {
    type,
    protocol,
    id: stringField(obj, 'id') as string,
    identity,
    component: stringField(obj, 'component') as string,
    timestamp,
    ...(version !== undefined ? { version } : {}),
    ...(newVersion !== undefined ? { newVersion } : {}),
    format,
  };
}

function cloudEventData(obj: JsonObject): JsonObject {
  const data = obj['data'];
  if (isJsonObject(data)) return data;
  const encoded = obj['data_base64'];
  if (typeof encoded === 'string') {
    if (!isStrictBase64(encoded)) throw new LifecycleEventError('CloudEvent data_base64 is not valid base64');
    return parseObject(Buffer.from(encoded, 'base64').toString('utf8'), 'CloudEvent data_base64');
  }
  throw new LifecycleEventError('CloudEvent carries neither a "data" object nor "data_base64"');
}

function parseObject(text: string, what: string): JsonObject {
  const parsed = parseForeignJson(text, (why) => new LifecycleEventError(`${what}: invalid JSON: ${why}`));
  if (!isJsonObject(parsed)) throw new LifecycleEventError(`${what}: not a JSON object`);
  return parsed;
}

/**
 * Parses an event in either format. Detection follows go-choria: a `protocol` starting with
 * `io.choria.lifecycle` is the Choria format; `specversion` 1.0 with source `io.choria.lifecycle`
 * is a CloudEvent whose `data` is a Choria-format event; anything else (including the legacy
 * `choria:lifecycle:<type>:1` spelling) is an unsupported format. Throws LifecycleEventError, or
 * IdentityRefusedError for an identity that fails the identity rule.
 */
export function parseLifecycleEvent(input: Uint8Array | string): ReceivedLifecycleEvent {
  const obj = parseObject(typeof input === 'string' ? input : bytesToText(input), 'event');
  const protocol = obj['protocol'];
  if (typeof protocol === 'string' && protocol.startsWith(PROTOCOL_PREFIX)) return parseChoriaFormat(obj, 'choria');
  if (obj['specversion'] === '1.0' && obj['source'] === CLOUDEVENT_SOURCE)
    return parseChoriaFormat(cloudEventData(obj), 'cloudevents');
  throw new LifecycleEventError('unsupported event format');
}

export interface LifecycleEventInit {
  readonly type: LifecycleType;
  readonly identity: string;
  readonly component: string;
  readonly version?: string;
  readonly newVersion?: string;
  /** default: a new UUIDv4 */
  readonly id?: string;
  /** default: now, Unix seconds */
  readonly timestamp?: number;
  readonly format?: LifecycleFormat;
}

export function newLifecycleEvent(init: LifecycleEventInit): LifecycleEvent {
  return {
    type: init.type,
    protocol: `${PROTOCOL_PREFIX}.v1.${init.type}`,
    id: init.id ?? randomUUID(),
    identity: init.identity,
    component: init.component,
    timestamp: init.timestamp ?? Math.floor(Date.now() / 1000),
    ...(init.version !== undefined ? { version: init.version } : {}),
    ...(init.newVersion !== undefined ? { newVersion: init.newVersion } : {}),
    format: init.format ?? 'choria',
  };
}

function choriaFormatObject(ev: LifecycleEvent): Record<string, unknown> {
  const obj: Record<string, unknown> = {
    protocol: `${PROTOCOL_PREFIX}.v1.${ev.type}`,
    id: ev.id,
    identity: ev.identity,
    component: ev.component,
    timestamp: ev.timestamp,
  };
  // only the types whose Go structs have these fields carry them
  if (ev.type === 'startup' || ev.type === 'alive' || ev.type === 'upgraded') obj['version'] = ev.version ?? '';
  if (ev.type === 'upgraded') obj['new_version'] = ev.newVersion ?? '';
  return obj;
}

function rfc3339Seconds(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Encodes an event as go-choria publishes it (key order included). Default format: the event's own. */
export function encodeLifecycleEvent(ev: LifecycleEvent, format: LifecycleFormat = ev.format): string {
  const data = choriaFormatObject(ev);
  if (format === 'choria') return JSON.stringify(data);
  return JSON.stringify({
    specversion: '1.0',
    id: ev.id,
    source: CLOUDEVENT_SOURCE,
    type: data['protocol'],
    subject: ev.identity,
    datacontenttype: 'application/json',
    time: rfc3339Seconds(ev.timestamp),
    data,
  });
}

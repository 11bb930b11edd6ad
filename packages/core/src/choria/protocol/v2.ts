// Protocol version 2 envelopes (protocol.md §4). Inner layers and payloads are base64 ([]byte in
// Go); `time` is Unix nanoseconds, emitted exactly from a BigInt.
import { ProtocolError } from '../errors.js';
import {
  RawJson,
  bytesToText,
  fromBase64,
  isJsonObject,
  jsonObjectText,
  optionalString,
  parseJsonObject,
  requireInteger,
  requireProtocol,
  requireString,
  sha256Base64,
  toBase64,
  type JsonObject,
} from './encoding.js';
import { emptyFilter, filterToJson, parseFilter, type Filter } from './filter.js';
import { parseTraceHops } from './v1.js';
import type {
  DecodedReply,
  DecodedRequest,
  DecodedTransport,
  EncodedReply,
  EncodedRequest,
  OutgoingReply,
  OutgoingRequest,
  ProtocolCodec,
  RequestSigning,
  TransportHeaders,
} from './types.js';

export const V2 = {
  transport: 'io.choria.protocol.v2.transport',
  secureRequest: 'io.choria.protocol.v2.secure_request',
  request: 'io.choria.protocol.v2.request',
  secureReply: 'io.choria.protocol.v2.secure_reply',
  reply: 'io.choria.protocol.v2.reply',
} as const;

/**
 * Discovery payload text. Go builds the payload `cGluZw==` and the []byte encoding adds a second
 * base64 layer, so the wire value is `Y0dsdVp3PT0=` (§4.2).
 */
export const V2_DISCOVERY_PAYLOAD = 'cGluZw==';
export const V2_DISCOVERY_MESSAGE = 'Y0dsdVp3PT0=';

// The upstream v2 reply schema pins `protocol` to the request constant; real servers send the
// reply constant. Both are accepted (§3.11).
const V2_REPLY_PROTOCOLS: readonly string[] = [V2.reply, V2.request];

export interface V2RequestFields {
  readonly id: string;
  readonly sender: string;
  readonly caller: string;
  readonly collective: string;
  readonly agent: string;
  readonly ttl: number;
  /** Unix nanoseconds */
  readonly time: bigint;
  readonly filter: Filter;
  /** the payload bytes (base64-encoded into `message`) */
  readonly payload: Uint8Array | string;
}

export interface V2ParsedRequest {
  readonly id: string;
  readonly sender: string;
  readonly caller: string;
  readonly collective: string;
  readonly agent: string;
  readonly ttl: number;
  /** Unix nanoseconds as a Number (sub-microsecond precision lost) */
  readonly time: number;
  readonly filter: Filter;
  readonly payload: Buffer;
}

export interface V2ReplyFields {
  readonly request: string;
  readonly sender: string;
  readonly agent: string;
  readonly time: bigint;
  readonly payload: Uint8Array | string;
}

export interface V2ParsedReply {
  readonly request: string;
  readonly sender: string;
  readonly agent: string;
  readonly time: number;
  readonly payload: Buffer;
}

function toText(input: Uint8Array | string): string {
  return typeof input === 'string' ? input : bytesToText(input);
}

const SUBJECT_UNSAFE = /[\s.*>]/;

function checkV2Request(f: { id: string; sender: string; caller: string; collective: string; agent: string; ttl: number }): void {
  if (f.id === '' || SUBJECT_UNSAFE.test(f.id)) throw new ProtocolError(`v2 request id ${JSON.stringify(f.id)} must be non-empty and subject-safe`);
  for (const [key, value] of [['sender', f.sender], ['caller', f.caller], ['collective', f.collective], ['agent', f.agent]] as const) {
    if (value === '') throw new ProtocolError(`v2 request ${key} must not be empty`);
  }
  if (!Number.isInteger(f.ttl) || f.ttl < 1) throw new ProtocolError(`v2 request ttl must be an integer >= 1, got ${f.ttl}`);
}

export function buildV2RequestJson(f: V2RequestFields): string {
  checkV2Request(f);
  if (f.time < 1n) throw new ProtocolError('v2 request time must be >= 1');
  return jsonObjectText([
    ['protocol', V2.request],
    ['message', toBase64(f.payload)],
    ['id', f.id],
    ['sender', f.sender],
    ['caller', f.caller],
    ['collective', f.collective],
    ['agent', f.agent],
    ['ttl', f.ttl],
    ['time', new RawJson(f.time.toString())],
    ['filter', filterToJson(f.filter)],
  ]);
}

export function buildV2SecureRequestJson(requestJson: string, signature: string, caller: string, signer?: string): string {
  if (signature === '') throw new ProtocolError('v2 secure request signature must not be empty');
  if (caller === '') throw new ProtocolError('v2 secure request caller must not be empty (servers reject it by schema)');
  return jsonObjectText([
    ['protocol', V2.secureRequest],
    ['request', toBase64(requestJson)],
    ['signature', signature],
    ['caller', caller],
    ['signer', signer === '' ? undefined : signer],
  ]);
}

function v2Headers(h: TransportHeaders): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  if (h.replyTo !== undefined && h.replyTo !== '') headers['reply'] = h.replyTo;
  if (h.sender !== undefined && h.sender !== '') headers['sender'] = h.sender;
  if (h.trace !== undefined && h.trace.length > 0) headers['trace'] = h.trace;
  return headers;
}

export function buildV2TransportJson(secureJson: string, headers: TransportHeaders): string {
  return JSON.stringify({ protocol: V2.transport, data: toBase64(secureJson), headers: v2Headers(headers) });
}

export function buildV2ReplyJson(f: V2ReplyFields): string {
  return jsonObjectText([
    ['protocol', V2.reply],
    ['message', toBase64(f.payload)],
    ['request', f.request],
    ['sender', f.sender],
    ['agent', f.agent],
    ['time', new RawJson(f.time.toString())],
  ]);
}

export function buildV2SecureReplyJson(replyJson: string): { json: string; hash: string } {
  const hash = sha256Base64(replyJson);
  return { json: jsonObjectText([['protocol', V2.secureReply], ['reply', toBase64(replyJson)], ['hash', hash]]), hash };
}

export function parseV2Transport(input: Uint8Array | string): DecodedTransport {
  const what = 'v2 transport';
  const obj = parseJsonObject(toText(input), what);
  requireProtocol(obj, [V2.transport], what);
  const data = fromBase64(requireString(obj, 'data', what), `${what} data`);
  const raw = obj['headers'];
  const h: JsonObject = isJsonObject(raw) ? raw : {};
  const replyTo = h['reply'];
  const sender = h['sender'];
  const trace = parseTraceHops(h['trace'] ?? h['seen-by']);
  return {
    version: 'v2',
    data,
    headers: {
      ...(typeof replyTo === 'string' && replyTo !== '' ? { replyTo } : {}),
      ...(typeof sender === 'string' && sender !== '' ? { sender } : {}),
      ...(trace !== undefined ? { trace } : {}),
    },
  };
}

export interface V2SecureRequest {
  /** the Request JSON bytes (decoded from `request`) */
  readonly request: Buffer;
  readonly signature: string;
  readonly caller: string;
  readonly signer?: string;
}

export function parseV2SecureRequest(text: string): V2SecureRequest {
  const what = 'v2 secure request';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, [V2.secureRequest], what);
  const request = fromBase64(requireString(obj, 'request', what, { nonEmpty: true }), `${what} request`);
  const signer = optionalString(obj, 'signer', what);
  return {
    request,
    signature: requireString(obj, 'signature', what, { nonEmpty: true }),
    caller: requireString(obj, 'caller', what, { nonEmpty: true }),
    ...(signer !== undefined && signer !== '' ? { signer } : {}),
  };
}

export function parseV2Request(text: string): V2ParsedRequest {
  const what = 'v2 request';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, [V2.request], what);
  const fields = {
    id: requireString(obj, 'id', what, { nonEmpty: true }),
    sender: requireString(obj, 'sender', what, { nonEmpty: true }),
    caller: requireString(obj, 'caller', what, { nonEmpty: true }),
    collective: requireString(obj, 'collective', what, { nonEmpty: true }),
    agent: requireString(obj, 'agent', what, { nonEmpty: true }),
    ttl: requireInteger(obj, 'ttl', what),
  };
  checkV2Request(fields);
  const time = requireInteger(obj, 'time', what);
  if (time < 1) throw new ProtocolError(`${what}: "time" must be >= 1`);
  const payload = fromBase64(requireString(obj, 'message', what, { nonEmpty: true }), `${what} message`);
  const filter = obj['filter'] === undefined || obj['filter'] === null ? emptyFilter() : parseFilter(obj['filter'], what);
  return { ...fields, time, filter, payload };
}

/** Parses a secure reply and verifies its hash; returns the embedded Reply JSON bytes. */
export function parseV2SecureReply(text: string): { reply: Buffer; hash: string } {
  const what = 'v2 secure reply';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, [V2.secureReply], what);
  const reply = fromBase64(requireString(obj, 'reply', what, { nonEmpty: true }), `${what} reply`);
  const hash = requireString(obj, 'hash', what, { nonEmpty: true });
  if (sha256Base64(reply) !== hash) throw new ProtocolError(`${what}: hash does not match the reply`);
  return { reply, hash };
}

export function parseV2Reply(text: string): V2ParsedReply {
  const what = 'v2 reply';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, V2_REPLY_PROTOCOLS, what);
  return {
    payload: fromBase64(requireString(obj, 'message', what), `${what} message`),
    request: requireString(obj, 'request', what, { nonEmpty: true }),
    sender: requireString(obj, 'sender', what, { nonEmpty: true }),
    agent: requireString(obj, 'agent', what),
    time: requireInteger(obj, 'time', what),
  };
}

function asTransport(input: Uint8Array | string | DecodedTransport): DecodedTransport {
  if (typeof input === 'string' || input instanceof Uint8Array) return parseV2Transport(input);
  if (input.version !== 'v2') throw new ProtocolError(`expected a v2 transport, got ${input.version}`);
  return input;
}

export const v2Codec: ProtocolCodec = {
  version: 'v2',

  encodeRequest(req: OutgoingRequest, signer: RequestSigning): EncodedRequest {
    if (signer.protocol !== 'v2') throw new ProtocolError(`a ${signer.protocol} signer cannot sign v2 requests`);
    const requestJson = buildV2RequestJson({
      id: req.id,
      sender: req.sender,
      caller: req.callerId,
      collective: req.collective,
      agent: req.agent,
      ttl: req.ttl,
      time: req.timeNs,
      filter: req.filter,
      payload: req.payload,
    });
    const signature = signer.sign(Buffer.from(requestJson, 'utf8'));
    const secureRequestJson = buildV2SecureRequestJson(requestJson, signature, signer.credential);
    const transportJson = buildV2TransportJson(secureRequestJson, {
      replyTo: req.replyTo,
      sender: req.sender,
      ...(req.trace !== undefined ? { trace: req.trace } : {}),
    });
    return { requestJson, secureRequestJson, transportJson, signature };
  },

  decodeTransport: parseV2Transport,

  decodeRequest(input): DecodedRequest {
    const transport = asTransport(input);
    const secure = parseV2SecureRequest(transport.data.toString('utf8'));
    const requestJson = secure.request.toString('utf8');
    const r = parseV2Request(requestJson);
    return {
      version: 'v2',
      id: r.id,
      sender: r.sender,
      callerId: r.caller,
      collective: r.collective,
      agent: r.agent,
      ttl: r.ttl,
      time: r.time,
      filter: r.filter,
      payload: r.payload,
      signature: secure.signature,
      credential: secure.caller,
      requestJson,
      headers: transport.headers,
    };
  },

  encodeReply(reply: OutgoingReply): EncodedReply {
    const replyJson = buildV2ReplyJson({
      request: reply.requestId,
      sender: reply.sender,
      agent: reply.agent,
      time: reply.timeNs,
      payload: reply.body,
    });
    const secure = buildV2SecureReplyJson(replyJson);
    const transportJson = buildV2TransportJson(secure.json, {
      sender: reply.sender,
      ...(reply.trace !== undefined ? { trace: reply.trace } : {}),
    });
    return { replyJson, secureReplyJson: secure.json, transportJson, hash: secure.hash };
  },

  decodeReply(input): DecodedReply {
    const transport = asTransport(input);
    const { reply } = parseV2SecureReply(transport.data.toString('utf8'));
    const replyJson = reply.toString('utf8');
    const r = parseV2Reply(replyJson);
    return {
      version: 'v2',
      requestId: r.request,
      sender: r.sender,
      agent: r.agent,
      time: r.time,
      body: r.payload.toString('utf8'),
      headers: transport.headers,
      replyJson,
    };
  },
};

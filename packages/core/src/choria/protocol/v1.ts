// Protocol version 1 envelopes (protocol.md §3). Inner layers are embedded as plain JSON strings;
// only the transport `data` is base64.
import { ProtocolError } from '../errors.js';
import {
  bytesToText,
  fromBase64,
  isJsonObject,
  parseJsonObject,
  requireInteger,
  requireProtocol,
  requireString,
  sha256Base64,
  toBase64,
  type JsonObject,
} from './encoding.js';
import { filterToJson, parseFilter, type Filter } from './filter.js';
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
  TraceHop,
  TransportHeaders,
} from './types.js';

export const V1 = {
  transport: 'choria:transport:1',
  secureRequest: 'choria:secure:request:1',
  request: 'choria:request:1',
  secureReply: 'choria:secure:reply:1',
  reply: 'choria:reply:1',
} as const;

export const V1_MIN_TTL = 30;
export const V1_REQUEST_ID_LENGTH = 32;
/** Discovery payload: base64 of `ping`, because servers base64-decode the message when they can (§3.7). */
export const V1_DISCOVERY_MESSAGE = 'cGluZw==';

export interface V1RequestFields {
  readonly requestid: string;
  readonly senderid: string;
  readonly callerid: string;
  readonly collective: string;
  readonly agent: string;
  readonly ttl: number;
  /** Unix seconds */
  readonly time: number;
  readonly filter: Filter;
  /** the agent payload as a plain string */
  readonly message: string;
}

export interface V1ReplyFields {
  readonly requestid: string;
  readonly senderid: string;
  readonly agent: string;
  readonly time: number;
  readonly message: string;
}

function toText(input: Uint8Array | string): string {
  return typeof input === 'string' ? input : bytesToText(input);
}

function checkV1Request(f: V1RequestFields): void {
  if (f.requestid.length !== V1_REQUEST_ID_LENGTH) {
    throw new ProtocolError(`v1 request id must be exactly ${V1_REQUEST_ID_LENGTH} characters, got ${f.requestid.length}`);
  }
  if (!Number.isInteger(f.ttl) || f.ttl < V1_MIN_TTL) throw new ProtocolError(`v1 request ttl must be an integer >= ${V1_MIN_TTL}, got ${f.ttl}`);
  if (!Number.isInteger(f.time)) throw new ProtocolError(`v1 request time must be whole seconds, got ${f.time}`);
  for (const [key, value] of [['callerid', f.callerid], ['collective', f.collective], ['agent', f.agent], ['message', f.message]] as const) {
    if (value === '') throw new ProtocolError(`v1 request ${key} must not be empty`);
  }
}

export function buildV1RequestJson(f: V1RequestFields): string {
  checkV1Request(f);
  return JSON.stringify({
    protocol: V1.request,
    message: f.message,
    envelope: {
      requestid: f.requestid,
      senderid: f.senderid,
      callerid: f.callerid,
      collective: f.collective,
      agent: f.agent,
      ttl: f.ttl,
      time: f.time,
      filter: filterToJson(f.filter),
    },
  });
}

export function buildV1SecureRequestJson(requestJson: string, signature: string, pubcert: string): string {
  if (signature === '' || pubcert === '') throw new ProtocolError('v1 secure request signature and pubcert must not be empty');
  return JSON.stringify({ protocol: V1.secureRequest, message: requestJson, signature, pubcert });
}

function v1Headers(h: TransportHeaders): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  if (h.replyTo !== undefined && h.replyTo !== '') headers['reply-to'] = h.replyTo;
  if (h.sender !== undefined && h.sender !== '') headers['mc_sender'] = h.sender;
  if (h.trace !== undefined && h.trace.length > 0) headers['seen-by'] = h.trace;
  return headers;
}

/** `secureJson` is the secure request or secure reply text; it travels base64-encoded. */
export function buildV1TransportJson(secureJson: string, headers: TransportHeaders): string {
  return JSON.stringify({ protocol: V1.transport, data: toBase64(secureJson), headers: v1Headers(headers) });
}

export function buildV1ReplyJson(f: V1ReplyFields): string {
  if (f.message === '') throw new ProtocolError('v1 reply message must not be empty');
  return JSON.stringify({
    protocol: V1.reply,
    message: f.message,
    envelope: { requestid: f.requestid, senderid: f.senderid, agent: f.agent, time: f.time },
  });
}

export function buildV1SecureReplyJson(replyJson: string): { json: string; hash: string } {
  const hash = sha256Base64(replyJson);
  return { json: JSON.stringify({ protocol: V1.secureReply, message: replyJson, hash }), hash };
}

export function parseTraceHops(value: unknown): TraceHop[] | undefined {
  if (!Array.isArray(value)) return undefined;
  // informational only: malformed hops are dropped rather than failing the message
  return value.filter(
    (hop): hop is TraceHop => Array.isArray(hop) && hop.length === 3 && hop.every((p) => typeof p === 'string'),
  );
}

export function parseV1Transport(input: Uint8Array | string): DecodedTransport {
  const what = 'v1 transport';
  const obj = parseJsonObject(toText(input), what);
  requireProtocol(obj, [V1.transport], what);
  const data = fromBase64(requireString(obj, 'data', what), `${what} data`);
  const raw = obj['headers'];
  const h: JsonObject = isJsonObject(raw) ? raw : {};
  const replyTo = h['reply-to'];
  const sender = h['mc_sender'];
  const trace = parseTraceHops(h['seen-by']);
  return {
    version: 'v1',
    data,
    headers: {
      ...(typeof replyTo === 'string' && replyTo !== '' ? { replyTo } : {}),
      ...(typeof sender === 'string' && sender !== '' ? { sender } : {}),
      ...(trace !== undefined ? { trace } : {}),
    },
  };
}

export interface V1SecureRequest {
  readonly message: string;
  readonly signature: string;
  readonly pubcert: string;
}

export function parseV1SecureRequest(text: string): V1SecureRequest {
  const what = 'v1 secure request';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, [V1.secureRequest], what);
  return {
    message: requireString(obj, 'message', what, { nonEmpty: true }),
    signature: requireString(obj, 'signature', what, { nonEmpty: true }),
    pubcert: requireString(obj, 'pubcert', what, { nonEmpty: true }),
  };
}

export function parseV1Request(text: string): V1RequestFields {
  const what = 'v1 request';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, [V1.request], what);
  const message = requireString(obj, 'message', what, { nonEmpty: true });
  const env = obj['envelope'];
  if (!isJsonObject(env)) throw new ProtocolError(`${what}: "envelope" must be an object`);
  const ew = `${what} envelope`;
  const fields: V1RequestFields = {
    requestid: requireString(env, 'requestid', ew),
    senderid: requireString(env, 'senderid', ew),
    callerid: requireString(env, 'callerid', ew, { nonEmpty: true }),
    collective: requireString(env, 'collective', ew, { nonEmpty: true }),
    agent: requireString(env, 'agent', ew, { nonEmpty: true }),
    ttl: requireInteger(env, 'ttl', ew),
    time: requireInteger(env, 'time', ew),
    filter: parseFilter(env['filter'], ew),
    message,
  };
  checkV1Request(fields);
  return fields;
}

/** Parses a secure reply and verifies its hash; returns the embedded Reply JSON text. */
export function parseV1SecureReply(text: string): { replyJson: string; hash: string } {
  const what = 'v1 secure reply';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, [V1.secureReply], what);
  const replyJson = requireString(obj, 'message', what, { nonEmpty: true });
  const hash = requireString(obj, 'hash', what, { nonEmpty: true });
  if (sha256Base64(replyJson) !== hash) throw new ProtocolError(`${what}: hash does not match the reply`);
  return { replyJson, hash };
}

export function parseV1Reply(text: string): V1ReplyFields {
  const what = 'v1 reply';
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, [V1.reply], what);
  const env = obj['envelope'];
  if (!isJsonObject(env)) throw new ProtocolError(`${what}: "envelope" must be an object`);
  const ew = `${what} envelope`;
  return {
    message: requireString(obj, 'message', what),
    requestid: requireString(env, 'requestid', ew, { nonEmpty: true }),
    senderid: requireString(env, 'senderid', ew),
    agent: requireString(env, 'agent', ew),
    time: requireInteger(env, 'time', ew),
  };
}

function asTransport(input: Uint8Array | string | DecodedTransport): DecodedTransport {
  if (typeof input === 'string' || input instanceof Uint8Array) return parseV1Transport(input);
  if (input.version !== 'v1') throw new ProtocolError(`expected a v1 transport, got ${input.version}`);
  return input;
}

function secondsOf(timeNs: bigint): number {
  return Number(timeNs / 1_000_000_000n);
}

export const v1Codec: ProtocolCodec = {
  version: 'v1',

  encodeRequest(req: OutgoingRequest, signer: RequestSigning): EncodedRequest {
    if (signer.protocol !== 'v1') throw new ProtocolError(`a ${signer.protocol} signer cannot sign v1 requests`);
    const requestJson = buildV1RequestJson({
      requestid: req.id,
      senderid: req.sender,
      callerid: req.callerId,
      collective: req.collective,
      agent: req.agent,
      ttl: req.ttl,
      time: secondsOf(req.timeNs),
      filter: req.filter,
      message: req.payload,
    });
    const signature = signer.sign(Buffer.from(requestJson, 'utf8'));
    const secureRequestJson = buildV1SecureRequestJson(requestJson, signature, signer.credential);
    const transportJson = buildV1TransportJson(secureRequestJson, {
      replyTo: req.replyTo,
      sender: req.sender,
      ...(req.trace !== undefined ? { trace: req.trace } : {}),
    });
    return { requestJson, secureRequestJson, transportJson, signature };
  },

  decodeTransport: parseV1Transport,

  decodeRequest(input): DecodedRequest {
    const transport = asTransport(input);
    const secure = parseV1SecureRequest(transport.data.toString('utf8'));
    const r = parseV1Request(secure.message);
    return {
      version: 'v1',
      id: r.requestid,
      sender: r.senderid,
      callerId: r.callerid,
      collective: r.collective,
      agent: r.agent,
      ttl: r.ttl,
      time: r.time,
      filter: r.filter,
      payload: Buffer.from(r.message, 'utf8'),
      signature: secure.signature,
      credential: secure.pubcert,
      requestJson: secure.message,
      headers: transport.headers,
    };
  },

  encodeReply(reply: OutgoingReply): EncodedReply {
    const replyJson = buildV1ReplyJson({
      requestid: reply.requestId,
      senderid: reply.sender,
      agent: reply.agent,
      time: secondsOf(reply.timeNs),
      message: reply.body,
    });
    const secure = buildV1SecureReplyJson(replyJson);
    const transportJson = buildV1TransportJson(secure.json, {
      sender: reply.sender,
      ...(reply.trace !== undefined ? { trace: reply.trace } : {}),
    });
    return { replyJson, secureReplyJson: secure.json, transportJson, hash: secure.hash };
  },

  decodeReply(input): DecodedReply {
    const transport = asTransport(input);
    const { replyJson } = parseV1SecureReply(transport.data.toString('utf8'));
    const r = parseV1Reply(replyJson);
    return {
      version: 'v1',
      requestId: r.requestid,
      sender: r.senderid,
      agent: r.agent,
      time: r.time,
      body: r.message,
      headers: transport.headers,
      replyJson,
    };
  },
};

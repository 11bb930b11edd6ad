// Protocol version 2 documents. Inner layers and payloads are base64 ([]byte in
// Go); `time` is Unix nanoseconds, emitted exactly from a BigInt.
import { ProtocolError } from '../errors.js';
import {
  RawJson,
  base64Json,
  fromBase64,
  jsonObjectText,
  optionalString,
  readDocument,
  requireInteger,
  requireString,
  sha256Base64,
} from './encoding.js';
import { envelopeCodec, type EnvelopeLayers } from './envelope-codec.js';
import { emptyFilter, filterToJson, parseFilter } from './filter.js';
import type { ProtocolCodec, RequestAddressing } from './types.js';

export const V2 = {
  transport: 'io.choria.protocol.v2.transport',
  secureRequest: 'io.choria.protocol.v2.secure_request',
  request: 'io.choria.protocol.v2.request',
  secureReply: 'io.choria.protocol.v2.secure_reply',
  reply: 'io.choria.protocol.v2.reply',
} as const;

/**
 * Discovery payload text. Go builds the payload `cGluZw==` and the []byte encoding adds a second
 * base64 layer, so the wire value is `Y0dsdVp3PT0=`.
 */
export const V2_DISCOVERY_PAYLOAD = 'cGluZw==';
export const V2_DISCOVERY_MESSAGE = 'Y0dsdVp3PT0=';

// The upstream v2 reply schema pins `protocol` to the request constant; real servers send the
// reply constant. Both are accepted.
const V2_REPLY_PROTOCOLS: readonly string[] = [V2.reply, V2.request];

const SUBJECT_UNSAFE = /[\s.*>]/;

type Entries = ReadonlyArray<readonly [string, unknown]>;

/**
 * A Request or Reply document: protocol, base64 message, addressing
 * in Go's field order, the exact nanosecond time, the rest.
 */
function v2Document(
  protocol: string,
  message: string,
  addressing: Entries,
  timeNs: bigint,
  rest: Entries = [],
): string {
  return jsonObjectText([
    ['protocol', protocol],
    ['message', base64Json(message)],
    ...addressing,
    ['time', new RawJson(timeNs.toString())],
    ...rest,
  ]);
}

function checkV2Request(r: Omit<RequestAddressing, 'filter'>, time: number | bigint): void {
  if (r.id === '' || SUBJECT_UNSAFE.test(r.id))
    throw new ProtocolError(`v2 request id ${JSON.stringify(r.id)} must be non-empty and subject-safe`);
  for (const [key, value] of [
    ['sender', r.sender],
    ['caller', r.callerId],
    ['collective', r.collective],
    ['agent', r.agent],
  ] as const) {
    if (value === '') throw new ProtocolError(`v2 request ${key} must not be empty`);
  }
  if (!Number.isInteger(r.ttl) || r.ttl < 1)
    throw new ProtocolError(`v2 request ttl must be an integer >= 1, got ${r.ttl}`);
  if (time < 1) throw new ProtocolError('v2 request time must be >= 1');
}

export const v2Layers: EnvelopeLayers = {
  version: 'v2',
  transportProtocol: V2.transport,
  // v1's `seen-by` is read too: brokers that speak both may leave it
  headerKeys: { replyTo: 'reply', sender: 'sender', trace: ['trace', 'seen-by'] },

  buildRequest(req) {
    checkV2Request(req, req.timeNs);
    const addressing: Entries = [
      ['id', req.id],
      ['sender', req.sender],
      ['caller', req.callerId],
      ['collective', req.collective],
      ['agent', req.agent],
      ['ttl', req.ttl],
    ];
    return v2Document(V2.request, req.payload, addressing, req.timeNs, [['filter', filterToJson(req.filter)]]);
  },

  buildSecureRequest(requestJson, signature, caller) {
    if (signature === '') throw new ProtocolError('v2 secure request signature must not be empty');
    if (caller === '')
      throw new ProtocolError('v2 secure request caller must not be empty (servers reject it by schema)');
    return jsonObjectText([
      ['protocol', V2.secureRequest],
      ['request', base64Json(requestJson)],
      ['signature', signature],
      ['caller', caller],
    ]);
  },

  buildReply(reply) {
    return v2Document(
      V2.reply,
      reply.body,
      [
        ['request', reply.requestId],
        ['sender', reply.sender],
        ['agent', reply.agent],
      ],
      reply.timeNs,
    );
  },

  buildSecureReply(replyJson) {
    const hash = sha256Base64(replyJson);
    return {
      json: jsonObjectText([
        ['protocol', V2.secureReply],
        ['reply', base64Json(replyJson)],
        ['hash', hash],
      ]),
      hash,
    };
  },

  readSecureRequest(text) {
    const what = 'v2 secure request';
    const obj = readDocument(text, what, [V2.secureRequest]);
    const request = fromBase64(requireString(obj, 'request', what, { nonEmpty: true }), `${what} request`);
    // `signer` (a delegated signer's JWT) is allowed by the schema; a client has no use for it
    optionalString(obj, 'signer', what);
    return {
      requestJson: request.toString('utf8'),
      signature: requireString(obj, 'signature', what, { nonEmpty: true }),
      credential: requireString(obj, 'caller', what, { nonEmpty: true }),
    };
  },

  readRequest(text) {
    const what = 'v2 request';
    const obj = readDocument(text, what, [V2.request]);
    const addressing = {
      id: requireString(obj, 'id', what, { nonEmpty: true }),
      sender: requireString(obj, 'sender', what, { nonEmpty: true }),
      callerId: requireString(obj, 'caller', what, { nonEmpty: true }),
      collective: requireString(obj, 'collective', what, { nonEmpty: true }),
      agent: requireString(obj, 'agent', what, { nonEmpty: true }),
      ttl: requireInteger(obj, 'ttl', what),
    };
    const time = requireInteger(obj, 'time', what);
    checkV2Request(addressing, time);
    const payload = fromBase64(requireString(obj, 'message', what, { nonEmpty: true }), `${what} message`);
    const filter =
      obj['filter'] === undefined || obj['filter'] === null ? emptyFilter() : parseFilter(obj['filter'], what);
    return { ...addressing, time, filter, payload };
  },

  readSecureReply(text) {
    const what = 'v2 secure reply';
    const obj = readDocument(text, what, [V2.secureReply]);
    const reply = fromBase64(requireString(obj, 'reply', what, { nonEmpty: true }), `${what} reply`);
    const hash = requireString(obj, 'hash', what, { nonEmpty: true });
    if (sha256Base64(reply) !== hash) throw new ProtocolError(`${what}: hash does not match the reply`);
    return reply.toString('utf8');
  },

  readReply(text) {
    const what = 'v2 reply';
    const obj = readDocument(text, what, V2_REPLY_PROTOCOLS);
    return {
      body: fromBase64(requireString(obj, 'message', what), `${what} message`).toString('utf8'),
      requestId: requireString(obj, 'request', what, { nonEmpty: true }),
      sender: requireString(obj, 'sender', what, { nonEmpty: true }),
      agent: requireString(obj, 'agent', what),
      time: requireInteger(obj, 'time', what),
    };
  },
};

export const v2Codec: ProtocolCodec = envelopeCodec(v2Layers);

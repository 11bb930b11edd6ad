// Protocol version 1 documents. Inner layers are embedded as plain JSON strings;
// only the transport `data` is base64.
import { ProtocolError } from '../errors.js';
import { isJsonObject, readDocument, requireInteger, requireString, sha256Base64 } from './encoding.js';
import { envelopeCodec, secondsOf, type EnvelopeLayers } from './envelope-codec.js';
import { filterToJson, parseFilter } from './filter.js';
import type { ProtocolCodec, RequestAddressing } from './types.js';

export const V1 = {
  transport: 'choria:transport:1',
  secureRequest: 'choria:secure:request:1',
  request: 'choria:request:1',
  secureReply: 'choria:secure:reply:1',
  reply: 'choria:reply:1',
} as const;

export const V1_MIN_TTL = 30;
export const V1_REQUEST_ID_LENGTH = 32;
/** Discovery payload: base64 of `ping`, because servers base64-decode the message when they can. */
export const V1_DISCOVERY_MESSAGE = 'cGluZw==';

function checkV1Request(r: RequestAddressing, time: number, message: string): void {
  if (r.id.length !== V1_REQUEST_ID_LENGTH) {
    throw new ProtocolError(`v1 request id must be exactly ${V1_REQUEST_ID_LENGTH} characters, got ${r.id.length}`);
  }
  if (!Number.isInteger(r.ttl) || r.ttl < V1_MIN_TTL)
    throw new ProtocolError(`v1 request ttl must be an integer >= ${V1_MIN_TTL}, got ${r.ttl}`);
  if (!Number.isInteger(time)) throw new ProtocolError(`v1 request time must be whole seconds, got ${time}`);
  for (const [key, value] of [
    ['callerid', r.callerId],
    ['collective', r.collective],
    ['agent', r.agent],
    ['message', message],
  ] as const) {
    if (value === '') throw new ProtocolError(`v1 request ${key} must not be empty`);
  }
}

function envelopeOf(what: string, obj: Record<string, unknown>): Record<string, unknown> {
  const env = obj['envelope'];
  if (!isJsonObject(env)) throw new ProtocolError(`${what}: "envelope" must be an object`);
  return env;
}

export const v1Layers: EnvelopeLayers = {
  version: 'v1',
  transportProtocol: V1.transport,
  headerKeys: { replyTo: 'reply-to', sender: 'mc_sender', trace: ['seen-by'] },

  buildRequest(req) {
    const time = secondsOf(req.timeNs);
    checkV1Request(req, time, req.payload);
    return JSON.stringify({
      protocol: V1.request,
      message: req.payload,
      envelope: {
        requestid: req.id,
        senderid: req.sender,
        callerid: req.callerId,
        collective: req.collective,
        agent: req.agent,
        ttl: req.ttl,
        time,
        filter: filterToJson(req.filter),
      },
    });
  },

  buildSecureRequest(requestJson, signature, pubcert) {
    if (signature === '' || pubcert === '')
      throw new ProtocolError('v1 secure request signature and pubcert must not be empty');
    return JSON.stringify({ protocol: V1.secureRequest, message: requestJson, signature, pubcert });
  },

  buildReply(reply) {
    if (reply.body === '') throw new ProtocolError('v1 reply message must not be empty');
    return JSON.stringify({
      protocol: V1.reply,
      message: reply.body,
      envelope: {
        requestid: reply.requestId,
        senderid: reply.sender,
        agent: reply.agent,
        time: secondsOf(reply.timeNs),
      },
    });
  },

  buildSecureReply(replyJson) {
    const hash = sha256Base64(replyJson);
    return { json: JSON.stringify({ protocol: V1.secureReply, message: replyJson, hash }), hash };
  },

  readSecureRequest(text) {
    const what = 'v1 secure request';
    const obj = readDocument(text, what, [V1.secureRequest]);
    return {
      requestJson: requireString(obj, 'message', what, { nonEmpty: true }),
      signature: requireString(obj, 'signature', what, { nonEmpty: true }),
      credential: requireString(obj, 'pubcert', what, { nonEmpty: true }),
    };
  },

  readRequest(text) {
    const what = 'v1 request';
    const obj = readDocument(text, what, [V1.request]);
    const message = requireString(obj, 'message', what, { nonEmpty: true });
    const ew = `${what} envelope`;
    const env = envelopeOf(what, obj);
    const request = {
      id: requireString(env, 'requestid', ew),
      sender: requireString(env, 'senderid', ew),
      callerId: requireString(env, 'callerid', ew, { nonEmpty: true }),
      collective: requireString(env, 'collective', ew, { nonEmpty: true }),
      agent: requireString(env, 'agent', ew, { nonEmpty: true }),
      ttl: requireInteger(env, 'ttl', ew),
      time: requireInteger(env, 'time', ew),
      filter: parseFilter(env['filter'], ew),
      payload: Buffer.from(message, 'utf8'),
    };
    checkV1Request(request, request.time, message);
    return request;
  },

  readSecureReply(text) {
    const what = 'v1 secure reply';
    const obj = readDocument(text, what, [V1.secureReply]);
    const replyJson = requireString(obj, 'message', what, { nonEmpty: true });
    const hash = requireString(obj, 'hash', what, { nonEmpty: true });
    if (sha256Base64(replyJson) !== hash) throw new ProtocolError(`${what}: hash does not match the reply`);
    return replyJson;
  },

  readReply(text) {
    const what = 'v1 reply';
    const obj = readDocument(text, what, [V1.reply]);
    const ew = `${what} envelope`;
    const env = envelopeOf(what, obj);
    return {
      body: requireString(obj, 'message', what),
      requestId: requireString(env, 'requestid', ew, { nonEmpty: true }),
      sender: requireString(env, 'senderid', ew),
      agent: requireString(env, 'agent', ew),
      time: requireInteger(env, 'time', ew),
    };
  },
};

export const v1Codec: ProtocolCodec = envelopeCodec(v1Layers);

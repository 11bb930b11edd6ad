// Server-side reply encoding: Reply -> Secure Reply (sha256 hash)
// -> Transport, always in the protocol version of the request being answered.
import { createHash } from 'node:crypto';
import { PROTOCOL } from './decode.js';
import { goJsonStringify } from './gojson.js';
import type { ProtocolVersion } from './types.js';

export interface ReplyParams {
  version: ProtocolVersion;
  requestId: string;
  /** replying server identity */
  identity: string;
  agent: string;
  /** the agent reply body (MCORPC JSON text, or `pong`) */
  body: string;
  /** connected broker URL for the trace hop, e.g. nats://127.0.0.1:4222 */
  brokerUrl: string;
  nowMs: number;
}

function sha256Base64(data: Buffer): string {
  return createHash('sha256').update(data).digest('base64');
}

/** Returns the NATS payload of the reply transport. */
export function encodeReply(p: ReplyParams): Buffer {
  const hop = [[p.brokerUrl, p.identity, p.brokerUrl]];
  if (p.version === 'v1') {
    const reply =
      `{"protocol":"${PROTOCOL.v1.reply}","message":${goJsonStringify(p.body)},"envelope":{` +
      `"requestid":${goJsonStringify(p.requestId)},"senderid":${goJsonStringify(p.identity)},` +
      `"agent":${goJsonStringify(p.agent)},"time":${Math.floor(p.nowMs / 1000)}}}`;
    const replyBytes = Buffer.from(reply, 'utf8');
    const secure =
      `{"protocol":"${PROTOCOL.v1.secureReply}","message":${goJsonStringify(reply)},` +
      `"hash":"${sha256Base64(replyBytes)}"}`;
    const transport =
      `{"protocol":"${PROTOCOL.v1.transport}","data":"${Buffer.from(secure, 'utf8').toString('base64')}",` +
      `"headers":{"mc_sender":${goJsonStringify(p.identity)},"seen-by":${goJsonStringify(hop)}}}`;
    return Buffer.from(transport, 'utf8');
  }
  // v2 time is Unix nanoseconds, beyond 2^53: printed from a BigInt.
  const nanos = BigInt(Math.floor(p.nowMs)) * 1_000_000n;
  const reply =
    `{"protocol":"${PROTOCOL.v2.reply}","message":"${Buffer.from(p.body, 'utf8').toString('base64')}",` +
    `"request":${goJsonStringify(p.requestId)},"sender":${goJsonStringify(p.identity)},` +
    `"agent":${goJsonStringify(p.agent)},"time":${nanos.toString()}}`;
  const replyBytes = Buffer.from(reply, 'utf8');
  const secure =
    `{"protocol":"${PROTOCOL.v2.secureReply}","reply":"${replyBytes.toString('base64')}",` +
    `"hash":"${sha256Base64(replyBytes)}"}`;
  const transport =
    `{"protocol":"${PROTOCOL.v2.transport}","data":"${Buffer.from(secure, 'utf8').toString('base64')}",` +
    `"headers":{"sender":${goJsonStringify(p.identity)},"trace":${goJsonStringify(hop)}}}`;
  return Buffer.from(transport, 'utf8');
}

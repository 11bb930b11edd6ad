// Picks the envelope codec for a protocol version, and the payload rules both versions share.
import { isStrictBase64 } from './encoding.js';
import type { ProtocolCodec, ProtocolVersion } from './types.js';
import { v1Codec } from './v1.js';
import { v2Codec } from './v2.js';

export function codecFor(version: ProtocolVersion): ProtocolCodec {
  return version === 'v1' ? v1Codec : v2Codec;
}

/**
 * The discovery payload text, identical for both versions: base64 of `ping`. v1 carries it as is,
 * v2 base64-encodes it once more; servers decode one extra layer and then look for `ping`.
 */
export const DISCOVERY_PAYLOAD = 'cGluZw==';
export const DISCOVERY_REPLY_BODY = 'pong';

/**
 * What a go-choria server makes of a request payload: it tries a base64 decode and keeps the
 * decoded bytes when that succeeds, the raw bytes otherwise. For simulators and tests.
 */
export function serverSidePayload(payload: Uint8Array): Buffer {
  const raw = Buffer.from(payload);
  // Go's decoder skips CR and LF; otherwise it is the strict padded standard alphabet
  const text = raw.toString('latin1').replace(/[\r\n]/g, '');
  if (text !== '' && isStrictBase64(text)) return Buffer.from(text, 'base64');
  return raw;
}

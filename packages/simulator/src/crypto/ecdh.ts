// The node's X25519 key pair made by each `jwt` call and the shared secret used by `configure` to
// decrypt a private key.
import { createPublicKey, diffieHellman, type KeyObject } from 'node:crypto';
import { generateOkpPair, type OkpPair } from './keys.js';

export function generateX25519(): OkpPair {
  return generateOkpPair('x25519');
}

/** Go's hex decoder error texts, since they end up in the status message. */
function goHexDecode(hex: string): Buffer {
  for (let i = 0; i < hex.length; i++) {
    const c = hex.charAt(i);
    if (!/[0-9a-fA-F]/.test(c)) {
      const code = c.codePointAt(0) ?? 0;
      throw new Error(`encoding/hex: invalid byte: U+${code.toString(16).toUpperCase().padStart(4, '0')} '${c}'`);
    }
  }
  if (hex.length % 2 !== 0) throw new Error('encoding/hex: odd length hex string');
  return Buffer.from(hex, 'hex');
}

/** X25519(own private, peer public): the raw 32-byte output, no KDF. Throws with a reason. */
export function x25519SharedSecret(own: KeyObject | undefined, peerPublicHex: string): Buffer {
  const peer = goHexDecode(peerPublicHex);
  if (own === undefined) throw new Error('private key not set');
  if (peer.length !== 32) throw new Error(`bad point length: ${peer.length}, expected 32`);
  // JWK rather than DER import: see crypto/keys.ts
  const peerKey = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: peer.toString('base64url') }, format: 'jwk' });
  try {
    return diffieHellman({ privateKey: own, publicKey: peerKey });
  } catch {
    throw new Error('bad input point: low order point');
  }
}

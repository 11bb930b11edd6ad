// The node's X25519 key pair made by each `jwt` call and the shared secret used by `configure` to
// decrypt a private key (security.md §1.4, §6.4).
import { createPublicKey, diffieHellman, generateKeyPairSync, type KeyObject } from 'node:crypto';

const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');

export interface X25519Pair {
  privateKey: KeyObject;
  publicHex: string;
}

export function generateX25519(): X25519Pair {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { privateKey, publicHex: der.subarray(der.length - 32).toString('hex') };
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
  const peerKey = createPublicKey({ key: Buffer.concat([X25519_SPKI_PREFIX, peer]), format: 'der', type: 'spki' });
  try {
    return diffieHellman({ privateKey: own, publicKey: peerKey });
  } catch {
    throw new Error('bad input point: low order point');
  }
}

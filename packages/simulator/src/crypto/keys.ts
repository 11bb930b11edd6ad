// Key helpers: Ed25519 from raw seeds and public keys, RSA from PEM, fresh
// node keys, and fresh signer keys for the bin when none are given.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';

const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function hexBytes(hex: string, expected: number, what: string): Buffer {
  if (!/^[0-9a-fA-F]*$/.test(hex) || hex.length !== expected * 2) {
    throw new Error(`${what} must be ${expected * 2} hex characters`);
  }
  return Buffer.from(hex, 'hex');
}

export function ed25519PrivateFromSeedHex(seedHex: string): KeyObject {
  const seed = hexBytes(seedHex.trim(), 32, 'an ed25519 seed');
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

// Raw keys go in and out as JWK, not DER: OpenSSL's DER decoder and encoder cost many times the JWK
// path, and every simulated node does several of these per provisioning.
export function ed25519PublicFromHex(publicHex: string): KeyObject {
  const raw = hexBytes(publicHex.trim(), 32, 'an ed25519 public key');
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
}

/**
 * Raw 32-byte public key of an Ed25519 (or X25519) key, private or public, as lowercase hex. Only
 * for keys made from seeds or imported: never for a key from generateKeyPair (see generateOkpPair).
 */
export function ed25519PublicHex(key: KeyObject): string {
  const x = key.export({ format: 'jwk' }).x;
  if (typeof x !== 'string') throw new Error(`not an OKP key: ${key.asymmetricKeyType ?? key.type}`);
  return Buffer.from(x, 'base64url').toString('hex');
}

/** A fresh Ed25519 or X25519 key pair: the private key, and the public key as raw hex. */
export interface OkpPair {
  readonly privateKey: KeyObject;
  readonly publicHex: string;
}

/**
 * Generates an Ed25519 or X25519 key pair. The public half comes out of the generation already
 * encoded (`publicKeyEncoding`), and no KeyObject of a generated key is exported afterwards: on
 * Node 20.20 / OpenSSL 3.0, exporting a freshly generated key can deadlock the process when a
 * garbage collection during the export runs the finished generation job's destructor, which waits
 * for the key lock the export holds (main thread in futex_wait, forever). During the generation
 * call the job is still referenced, so its destructor cannot run. The cost is that of the old
 * generate-then-export (about 76 us a key here, against 228 us for an SPKI DER encoding).
 */
export function generateOkpPair(type: 'ed25519' | 'x25519'): OkpPair {
  const { privateKey, publicKey } = generateKeyPairSync(type as 'ed25519', { publicKeyEncoding: { format: 'jwk' } });
  const x = (publicKey as { x?: unknown }).x;
  if (typeof x !== 'string') throw new Error(`${type} key generation returned no public key`);
  return { privateKey, publicHex: Buffer.from(x, 'base64url').toString('hex') };
}

export function rsaPrivateFromPem(pem: string): KeyObject {
  const key = createPrivateKey({ key: pem, format: 'pem' });
  if (key.asymmetricKeyType !== 'rsa') throw new Error('the JWT signing key is not an RSA private key');
  return key;
}

/** RSA public key from an SPKI `PUBLIC KEY`, a PKCS#1 `RSA PUBLIC KEY` or an X.509 certificate. */
export function rsaPublicFromPem(pem: string): KeyObject {
  const key = createPublicKey({ key: pem, format: 'pem' });
  if (key.asymmetricKeyType !== 'rsa') throw new Error('the verification key is not an RSA public key');
  return key;
}

export interface GeneratedSigner {
  /** PKCS#1 PEM (rsa) or 64 hex characters (ed25519) */
  privateText: string;
  /** SPKI PEM (rsa) or 64 hex characters (ed25519) */
  publicText: string;
}

export function generateSigner(kind: 'rsa' | 'ed25519', rsaBits = 2048): GeneratedSigner {
  if (kind === 'rsa') {
    // encoded by the generation itself, never exported afterwards (generateOkpPair says why)
    const { privateKey, publicKey } = generateKeyPairSync('rsa', {
      modulusLength: rsaBits,
      privateKeyEncoding: { format: 'pem', type: 'pkcs1' },
      publicKeyEncoding: { format: 'pem', type: 'spki' },
    });
    return { privateText: privateKey, publicText: publicKey };
  }
  const seed = randomBytes(32).toString('hex');
  return { privateText: seed, publicText: ed25519PublicHex(ed25519PrivateFromSeedHex(seed)) };
}

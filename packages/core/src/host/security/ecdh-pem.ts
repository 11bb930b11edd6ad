// Private-key transport: X25519 agreement with the node plus legacy PEM encryption.
//
// Written by hand because Node can read but not write the legacy (`Proc-Type: 4,ENCRYPTED`,
// `DEK-Info`) PEM format that go-choria nodes decrypt: `KeyObject.export({cipher})` produces PKCS#8
// `ENCRYPTED PRIVATE KEY` (PBES2), which nodes cannot read, and it only exports keys Node can parse,
// while the helper's block bytes must be passed through untouched under the `RSA PRIVATE KEY` label.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  randomBytes,
  type KeyObject,
} from 'node:crypto';
import { decodeHexStrict } from '../../util/go-hex.js';
import { decodeFirstPemBlock, encodePem } from './pem.js';

export interface EncryptKeyOptions {
  /** The provisioner's X25519 private key (32 bytes); fresh random bytes when absent (tests pin it). */
  privateKey?: Buffer;
  /** The 16-byte AES IV; fresh random bytes when absent (tests pin it). */
  iv?: Buffer;
}

export interface EncryptedKey {
  /** The key re-encrypted as legacy PEM, sent as `key` in `configure`. */
  pem: string;
  /** The provisioner's X25519 public key, sent as `ecdh_public` in `configure`. */
  ecdhPublicHex: string;
}

const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const X25519_BYTES = 32;
const AES_BLOCK = 16;
const SALT_BYTES = 8;
const OUTPUT_PEM_TYPE = 'RSA PRIVATE KEY';
const AES_KEY_BYTES: Readonly<Record<string, number>> = { 'AES-128-CBC': 16, 'AES-192-CBC': 24, 'AES-256-CBC': 32 };
const INCORRECT_PASSWORD = 'x509: decryption password incorrect';

/**
 * Encrypts the first PEM block of the helper's `key` for a node whose X25519 public key (from its
 * latest `jwt` reply) is `nodeEcdhPublicHex`: raw X25519 secret as password, AES-256-CBC legacy PEM,
 * always labelled `RSA PRIVATE KEY`.
 */
export function encryptKeyForNode(keyPem: string, nodeEcdhPublicHex: string, opts?: EncryptKeyOptions): EncryptedKey {
  if (keyPem === '') throw new Error('no key to encrypt');
  if (nodeEcdhPublicHex === '')
    throw new Error('private key received from helper but server did not start Diffie-Hellman exchange');
  const block = decodeFirstPemBlock(keyPem);
  if (block === null) throw new Error('bad key received');
  const nodePublic = decodeHexStrict(nodeEcdhPublicHex);

  const privateKey = opts?.privateKey ?? randomBytes(X25519_BYTES);
  const ownKey = x25519PrivateKey(privateKey);
  const ecdhPublicHex = publicBytes(ownKey).toString('hex');
  const secret = sharedSecret(ownKey, nodePublic);

  const iv = opts?.iv ?? randomBytes(AES_BLOCK);
  return { pem: encryptLegacyPem(OUTPUT_PEM_TYPE, block.bytes, secret, iv), ecdhPublicHex };
}

/** The X25519 public key (32 bytes) of a raw 32-byte private key. */
export function x25519PublicFromPrivate(privateKey: Buffer): Buffer {
  return publicBytes(x25519PrivateKey(privateKey));
}

/** The raw (unhashed) X25519 shared secret; fails like Go for bad lengths and low-order points. */
export function x25519SharedSecret(privateKey: Buffer, peerPublic: Buffer): Buffer {
  return sharedSecret(x25519PrivateKey(privateKey), peerPublic);
}

function publicBytes(privateKey: KeyObject): Buffer {
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - X25519_BYTES);
}

function sharedSecret(privateKey: KeyObject, peerPublic: Buffer): Buffer {
  if (peerPublic.length !== X25519_BYTES)
    throw new Error(`bad point length: ${peerPublic.length}, expected ${X25519_BYTES}`);
  const publicKey = createPublicKey({
    key: Buffer.concat([X25519_SPKI_PREFIX, peerPublic]),
    format: 'der',
    type: 'spki',
  });
  let secret: Buffer;
  try {
    secret = diffieHellman({ privateKey, publicKey });
  } catch {
    // OpenSSL refuses an all-zero result, which only a low-order point produces.
    throw new Error('bad input point: low order point');
  }
  if (secret.every((byte) => byte === 0)) throw new Error('bad input point: low order point');
  return secret;
}

/** OpenSSL EVP_BytesToKey with MD5 and one iteration, key part only. */
export function legacyPemKey(password: Buffer, salt: Buffer, keyLength: number): Buffer {
  const parts: Buffer[] = [];
  let previous = Buffer.alloc(0);
  let length = 0;
  while (length < keyLength) {
    previous = createHash('md5').update(previous).update(password).update(salt).digest();
    parts.push(previous);
    length += previous.length;
  }
  return Buffer.concat(parts).subarray(0, keyLength);
}

/** Legacy PEM encryption of `der` with AES-256-CBC (Go `x509.EncryptPEMBlock` + `pem.Encode`). */
export function encryptLegacyPem(type: string, der: Uint8Array, password: Buffer, iv: Buffer): string {
  if (iv.length !== AES_BLOCK) throw new Error(`IV must be ${AES_BLOCK} bytes, got ${iv.length}`);
  const key = legacyPemKey(password, iv.subarray(0, SALT_BYTES), 32);
  const cipher = createCipheriv('aes-256-cbc', key, iv); // default PKCS#7 padding = RFC 1423 padding
  const ciphertext = Buffer.concat([cipher.update(der), cipher.final()]);
  const headers = new Map([
    ['Proc-Type', '4,ENCRYPTED'],
    ['DEK-Info', `AES-256-CBC,${iv.toString('hex')}`],
  ]);
  return encodePem({ type, headers, bytes: ciphertext });
}

/** Decrypts the first block of a legacy encrypted PEM (as a go-choria node does); returns the plaintext DER. */
export function decryptLegacyPem(pem: string, password: Buffer): Buffer {
  const block = decodeFirstPemBlock(pem);
  if (block === null) throw new Error('bad key received');
  const dekInfo = block.headers.get('DEK-Info');
  if (dekInfo === undefined) throw new Error('key is not encrypted');

  const comma = dekInfo.indexOf(',');
  if (comma < 0) throw new Error('x509: malformed DEK-Info header');
  const mode = dekInfo.slice(0, comma);
  const keyLength = AES_KEY_BYTES[mode];
  if (keyLength === undefined) throw new Error('x509: unknown encryption mode');
  const iv = decodeHexStrict(dekInfo.slice(comma + 1));
  if (iv.length !== AES_BLOCK) throw new Error('x509: incorrect IV size');
  if (block.bytes.length % AES_BLOCK !== 0)
    throw new Error('x509: encrypted PEM data is not a multiple of the block size');

  const key = legacyPemKey(password, iv.subarray(0, SALT_BYTES), keyLength);
  const decipher = createDecipheriv(`aes-${keyLength * 8}-cbc`, key, iv);
  decipher.setAutoPadding(false); // check the padding as Go does, to report its error text
  const data = Buffer.concat([decipher.update(block.bytes), decipher.final()]);

  if (data.length === 0) throw new Error('x509: invalid padding');
  const padding = data[data.length - 1] ?? 0;
  if (padding === 0 || padding > AES_BLOCK || padding > data.length) throw new Error(INCORRECT_PASSWORD);
  for (let i = data.length - padding; i < data.length; i++) {
    if (data[i] !== padding) throw new Error(INCORRECT_PASSWORD);
  }
  return data.subarray(0, data.length - padding);
}

function x25519PrivateKey(privateKey: Buffer): KeyObject {
  if (privateKey.length !== X25519_BYTES)
    throw new Error(`X25519 private key must be ${X25519_BYTES} bytes, got ${privateKey.length}`);
  return createPrivateKey({ key: Buffer.concat([X25519_PKCS8_PREFIX, privateKey]), format: 'der', type: 'pkcs8' });
}

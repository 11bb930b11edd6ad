// Ed25519 keys from and to their raw 32-byte forms, for the client's seed file (choria provider),
// the provisioner's signing seed and the nodes' public keys: one place for the DER wrapping and
// one reader of seed files.
// Keys are made from seeds and raw bytes, never generated and then exported: on Node 20.20 an
// export of a freshly generated key can deadlock during a garbage collection. Public keys are
// imported as JWK, which is much cheaper than OpenSSL's SPKI DER import, and every node's gen25519
// answer needs one.
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ProvisionerError } from './errors.js';
import { decodeHexStrict } from './go-hex.js';
import { errorText } from './values.js';

const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const RAW_BYTES = 32;

/** The private key for a 32-byte seed. */
export function ed25519KeyFromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== RAW_BYTES) throw new ProvisionerError('invalid seed length');
  return createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** A public key from its 32 raw bytes. */
export function ed25519PublicKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== RAW_BYTES) throw new ProvisionerError('invalid ed25519 public key size');
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') },
    format: 'jwk',
  });
}

/** The raw public key of an Ed25519 key (private or public) as 64 lowercase hex characters. */
export function ed25519PublicHex(key: KeyObject): string {
  if (key.asymmetricKeyType !== 'ed25519')
    throw new ProvisionerError(`not an ed25519 key: ${key.asymmetricKeyType ?? key.type}`);
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - RAW_BYTES).toString('hex');
}

/**
 * Reads a seed file: exactly 64 hex characters, no newline and no trimming, as upstream's seed
 * reader wants. Errors never echo the file's content.
 */
export function readEd25519SeedFile(path: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (err) {
    throw new ProvisionerError(`could not read ed25519 seed file ${path}: ${errorText(err)}`, { cause: err });
  }
  return ed25519SeedFromFileContent(content, path);
}

/** The rules of {@link readEd25519SeedFile} applied to content already read from `path`. */
export function ed25519SeedFromFileContent(content: Buffer, path: string): Buffer {
  let seed: Buffer;
  try {
    seed = decodeHexStrict(content);
  } catch (err) {
    throw new ProvisionerError(`invalid ed25519 seed file ${path}: ${errorText(err)}`, { cause: err });
  }
  if (seed.length !== RAW_BYTES) throw new ProvisionerError(`invalid ed25519 seed file ${path}: invalid seed length`);
  return seed;
}

// Reading key material the way upstream does: Ed25519 seed files, the
// `jwt_verify_cert` setting (path or hex literal) and the `jwt_signing_key` file.
import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ed25519KeyFromSeed, ed25519PublicKeyFromRaw } from '../../util/ed25519.js';
import { errorText } from '../../util/values.js';
import { decodeHexStrict } from '../../util/go-hex.js';
import { decodeFirstPemBlock } from './pem.js';

export type VerificationKey = { kind: 'rsa'; key: KeyObject } | { kind: 'ed25519'; key: KeyObject };

export type SigningKey =
  { kind: 'rsa'; alg: 'RS256'; key: KeyObject } | { kind: 'ed25519'; alg: 'EdDSA'; key: KeyObject };

const ED25519_PUBLIC_BYTES = 32;
const SEED_FILE_BYTES = 64;
const MIN_RSA_BITS = 1024;

const RSA_PRIVATE_HEADER = Buffer.from('-----BEGIN RSA PRIVATE KEY');
const PKCS8_PRIVATE_HEADER = Buffer.from('-----BEGIN PRIVATE KEY');
const CERTIFICATE_HEADER = Buffer.from('-----BEGIN CERTIFICATE');
const PUBLIC_KEY_HEADER = Buffer.from('-----BEGIN PUBLIC KEY');
const NOT_PEM = 'invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key';

/**
 * Resolves the `jwt_verify_cert` setting: when nothing exists at that path the setting itself is a
 * hex Ed25519 public key; otherwise the file is an RSA public key / certificate (PEM) or hex.
 */
export function loadVerificationKey(setting: string): VerificationKey {
  if (!pathExists(setting)) {
    // Upstream returns the hex error unwrapped, e.g. for a mistyped file path.
    const raw = decodeHexStrict(setting);
    // Upstream accepts any length here and then fails every EdDSA verification; failing now is clearer.
    if (raw.length !== ED25519_PUBLIC_BYTES) throw new Error('invalid ed25519 public key size');
    return { kind: 'ed25519', key: ed25519PublicKeyFromRaw(raw) };
  }

  let content: Buffer;
  try {
    content = readFileSync(setting);
  } catch (err) {
    throw new Error(`could not read validation certificate: ${errorText(err)}`, { cause: err });
  }
  return parseVerificationKeyFile(content);
}

/** Classifies verification-key file content by its first bytes. */
export function parseVerificationKeyFile(content: Buffer): VerificationKey {
  if (startsWith(content, CERTIFICATE_HEADER) || startsWith(content, PUBLIC_KEY_HEADER)) {
    try {
      return { kind: 'rsa', key: parseRsaPublicPem(content) };
    } catch (err) {
      throw new Error(`could not parse validation certificate: ${errorText(err)}`, { cause: err });
    }
  }

  let raw: Buffer;
  try {
    raw = decodeHexStrict(content);
  } catch (err) {
    throw new Error(`could not parse ed25519 public data: ${errorText(err)}`, { cause: err });
  }
  if (raw.length !== ED25519_PUBLIC_BYTES) throw new Error('invalid ed25519 public key size');
  return { kind: 'ed25519', key: ed25519PublicKeyFromRaw(raw) };
}

/** Reads `jwt_signing_key`: an RSA private key PEM (RS256) or a 64-byte hex Ed25519 seed file (EdDSA). */
export function loadSigningKey(path: string): SigningKey {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (err) {
    throw new Error(`could not read signing key: ${errorText(err)}`, { cause: err });
  }
  return parseSigningKeyFile(content, path);
}

/** Classifies signing-key file content read from `path`. */
export function parseSigningKeyFile(content: Buffer, path: string): SigningKey {
  if (startsWith(content, RSA_PRIVATE_HEADER) || startsWith(content, PKCS8_PRIVATE_HEADER)) {
    let key: KeyObject;
    try {
      key = parseRsaPrivatePem(content);
    } catch (err) {
      throw new Error(`could not parse signing key: ${errorText(err)}`, { cause: err });
    }
    return { kind: 'rsa', alg: 'RS256', key };
  }

  if (content.length === SEED_FILE_BYTES) {
    let seed: Buffer;
    try {
      seed = decodeHexStrict(content);
    } catch (err) {
      throw new Error(`invalid ed25519 seed file: ${errorText(err)}`, { cause: err });
    }
    return { kind: 'ed25519', alg: 'EdDSA', key: ed25519KeyFromSeed(seed) };
  }

  throw new Error(`unsupported key in ${path}`);
}

function parseRsaPublicPem(content: Buffer): KeyObject {
  const block = decodeFirstPemBlock(content);
  if (block === null) throw new Error(NOT_PEM);
  const key =
    attempt(() => createPublicKey({ key: block.bytes, format: 'der', type: 'spki' })) ??
    attempt(() => new X509Certificate(block.bytes).publicKey) ??
    attempt(() => createPublicKey({ key: block.bytes, format: 'der', type: 'pkcs1' }));
  if (key === undefined) throw new Error('not a PKIX public key, X.509 certificate or PKCS#1 public key');
  if (key.asymmetricKeyType !== 'rsa') throw new Error('key is not a valid RSA public key');
  return key;
}

function parseRsaPrivatePem(content: Buffer): KeyObject {
  const block = decodeFirstPemBlock(content);
  if (block === null) throw new Error(NOT_PEM);
  const key =
    attempt(() => createPrivateKey({ key: block.bytes, format: 'der', type: 'pkcs1' })) ??
    attempt(() => createPrivateKey({ key: block.bytes, format: 'der', type: 'pkcs8' }));
  if (key === undefined) throw new Error('not a PKCS#1 or PKCS#8 private key');
  if (key.asymmetricKeyType !== 'rsa') throw new Error('key is not a valid RSA private key');
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  // Go 1.24+ refuses such keys; Node would happily sign with them.
  if (bits < MIN_RSA_BITS)
    throw new Error(`crypto/rsa: ${bits}-bit keys are insecure, at least ${MIN_RSA_BITS} bits are required`);
  return key;
}

function pathExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (err) {
    // Only "does not exist" selects the hex branch; other stat errors take the file branch.
    return !(isErrnoException(err) && err.code === 'ENOENT');
  }
}

function attempt<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch {
    return undefined;
  }
}

function startsWith(content: Buffer, prefix: Buffer): boolean {
  return content.length >= prefix.length && content.subarray(0, prefix.length).equals(prefix);
}

function isErrnoException(err: unknown): err is NodeJS.ErrnoException {
  return err instanceof Error && 'code' in err;
}

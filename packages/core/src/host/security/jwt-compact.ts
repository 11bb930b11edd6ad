// Compact JWT parsing, signing and verification with golang-jwt v5 behaviour and error texts.
//
// Why not `jose`: jose refuses RSA keys below 2048 bits (verified:
// "RS256 requires key modulusLength to be 2048 bits or larger") while upstream signs and verifies
// with any RSA key of at least 1024 bits, so valid deployments would break; its JSON encoder cannot
// reproduce Go's `\u003c` escaping that byte-exact server tokens need; and Go's order of checks
// (typed claim decoding before the algorithm check) and error texts have to be rebuilt around it
// anyway. The signature primitives themselves are plain node:crypto calls.
import { sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { decodeGoStruct, GoDecodeError, isPlainObject, type Decoded, type StructSpec } from './go-decode.js';
import { parseForeignJson } from '../../util/json-syntax.js';
import { ProvisionerError } from '../../util/errors.js';

export type JwtAlgorithm = 'RS256' | 'RS384' | 'RS512' | 'EdDSA';

/** Algorithms accepted when verifying (a whitelist, as upstream configures golang-jwt). */
export const ACCEPTED_ALGORITHMS: readonly JwtAlgorithm[] = ['RS256', 'RS384', 'RS512', 'EdDSA'];

// Methods golang-jwt knows; any other `alg` is "unavailable" rather than "invalid".
const KNOWN_METHODS = new Set([
  'HS256',
  'HS384',
  'HS512',
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'none',
]);

const RSA_HASHES: Readonly<Record<Exclude<JwtAlgorithm, 'EdDSA'>, string>> = {
  RS256: 'sha256',
  RS384: 'sha384',
  RS512: 'sha512',
};

/** golang-jwt v5 error categories; messages are `<category>: <detail>` like upstream's. */
export const JwtErrorCategory = {
  malformed: 'token is malformed',
  unverifiable: 'token is unverifiable',
  signatureInvalid: 'token signature is invalid',
  invalidClaims: 'token has invalid claims',
} as const;

export class JwtError extends ProvisionerError {}

export interface CompactJwt {
  header: Record<string, unknown>;
  /** The JSON-parsed payload (not yet type-checked). */
  payload: unknown;
  /** `B64(header).B64(payload)`, the signed bytes. */
  signingInput: string;
  signatureSegment: string;
}

/** Splits and decodes header and payload; throws {@link JwtError} with golang-jwt's texts. */
export function parseCompactJwt(token: string): CompactJwt {
  const parts = token.split('.');
  if (parts.length !== 3)
    throw new JwtError(`${JwtErrorCategory.malformed}: token contains an invalid number of segments`);
  const [headerSegment = '', payloadSegment = '', signatureSegment = ''] = parts;

  const header = decodeJsonSegment(headerSegment, 'header');
  if (header !== null && !isPlainObject(header)) {
    throw new JwtError(`${JwtErrorCategory.malformed}: could not JSON decode header: header is not a JSON object`);
  }
  const payload = decodeJsonSegment(payloadSegment, 'claim');
  return { header: header ?? {}, payload, signingInput: `${headerSegment}.${payloadSegment}`, signatureSegment };
}

/**
 * Decodes the payload into the typed claims of `spec` (Go struct
 * `structName`), as golang-jwt does before any other check.
 */
export function decodeJwtClaims<S extends StructSpec>(jwt: CompactJwt, structName: string, spec: S): Decoded<S> {
  try {
    return decodeGoStruct(structName, spec, jwt.payload);
  } catch (err) {
    if (err instanceof GoDecodeError)
      throw new JwtError(`${JwtErrorCategory.malformed}: could not JSON decode claim: ${err.message}`);
    throw err;
  }
}

/**
 * Parses without verifying anything but the format, the claim types and a known `alg` (golang-jwt's ParseUnverified).
 */
export function parseJwtUnverified<S extends StructSpec>(token: string, structName: string, spec: S): Decoded<S> {
  const jwt = parseCompactJwt(token);
  const claims = decodeJwtClaims(jwt, structName, spec);
  knownAlgorithm(jwt.header);
  return claims;
}

/** The `alg` header, which must name a method golang-jwt knows (checked even when parsing unverified). */
export function knownAlgorithm(header: Record<string, unknown>): string {
  const alg = header['alg'];
  if (typeof alg !== 'string')
    throw new JwtError(`${JwtErrorCategory.unverifiable}: signing method (alg) is unspecified`);
  if (!KNOWN_METHODS.has(alg))
    throw new JwtError(`${JwtErrorCategory.unverifiable}: signing method (alg) is unavailable`);
  return alg;
}

/** The `alg` header checked against golang-jwt's registry and the accepted list. */
export function acceptedAlgorithm(header: Record<string, unknown>): JwtAlgorithm {
  const alg = knownAlgorithm(header);
  const accepted = ACCEPTED_ALGORITHMS.find((candidate) => candidate === alg);
  if (accepted === undefined)
    throw new JwtError(`${JwtErrorCategory.signatureInvalid}: signing method ${alg} is invalid`);
  return accepted;
}

/** The decoded signature segment (golang-jwt decodes it after the algorithm check, before choosing the key). */
export function decodeJwtSignature(jwt: CompactJwt): Buffer {
  return decodeSegment(jwt.signatureSegment, 'signature');
}

/**
 * Verifies `signature` over the signed part of `jwt` for `alg`
 * with `key`; throws {@link JwtError} when it does not verify.
 */
export function verifyJwtSignature(jwt: CompactJwt, alg: JwtAlgorithm, key: KeyObject, signature: Buffer): void {
  const data = Buffer.from(jwt.signingInput, 'ascii');
  if (alg === 'EdDSA') {
    if (!safeVerify(null, data, key, signature))
      throw new JwtError(`${JwtErrorCategory.signatureInvalid}: ed25519: verification error`);
    return;
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < 1024)
    throw new JwtError(`${JwtErrorCategory.signatureInvalid}: crypto/rsa: ${bits}-bit keys are insecure`);
  if (!safeVerify(RSA_HASHES[alg], data, key, signature)) {
    throw new JwtError(`${JwtErrorCategory.signatureInvalid}: crypto/rsa: verification error`);
  }
}

/** Signs a payload (already JSON text) as a compact JWT with the header Go writes: `{"alg":"…","typ":"JWT"}`. */
export function signCompactJwt(payloadJson: string, alg: 'RS256' | 'EdDSA', key: KeyObject): string {
  const header = Buffer.from(`{"alg":"${alg}","typ":"JWT"}`).toString('base64url');
  const payload = Buffer.from(payloadJson, 'utf8').toString('base64url');
  const signingInput = `${header}.${payload}`;
  const signature = cryptoSign(alg === 'EdDSA' ? null : 'sha256', Buffer.from(signingInput, 'ascii'), key);
  return `${signingInput}.${signature.toString('base64url')}`;
}

function decodeJsonSegment(segment: string, what: 'header' | 'claim'): unknown {
  const bytes = decodeSegment(segment, what);
  // the claims hold the provisioning token and the broker password: they are never quoted
  return parseForeignJson(
    bytes.toString('utf8'),
    (why) => new JwtError(`${JwtErrorCategory.malformed}: could not JSON decode ${what}: ${why}`),
  );
}

// base64url without padding; like Go's decoder, CR and LF anywhere are skipped.
function decodeSegment(segment: string, what: string): Buffer {
  const cleaned = segment.replace(/[\r\n]/g, '');
  const bad = cleaned.search(/[^A-Za-z0-9_-]/);
  if (bad >= 0 || cleaned.length % 4 === 1) {
    const at = bad >= 0 ? bad : cleaned.length - 1;
    throw new JwtError(
      `${JwtErrorCategory.malformed}: could not base64 decode ${what}: illegal base64 data at input byte ${at}`,
    );
  }
  return Buffer.from(cleaned, 'base64url');
}

function safeVerify(hash: string | null, data: Buffer, key: KeyObject, signature: Buffer): boolean {
  try {
    return cryptoVerify(hash, data, key, signature);
  } catch {
    return false;
  }
}

// Verifying the provisioning token a node returns from `choria_provision#jwt`.
import { isPlainObject } from './go-decode.js';
import {
  acceptedAlgorithm,
  decodeJwtClaims,
  decodeJwtSignature,
  JwtError,
  JwtErrorCategory,
  parseCompactJwt,
  verifyJwtSignature,
  type JwtAlgorithm,
} from './jwt-compact.js';
import { loadVerificationKey, type VerificationKey } from './keys.js';
import { CHAIN_ISSUER_PREFIX, DEFAULT_ORG, PROVISIONING_CLAIMS_SPEC } from './claim-specs.js';
import { ProvisionerError } from '../../util/errors.js';

/** The claims of a verified provisioning token; absent strings/bools hold Go's zero values. */
export interface ProvisioningClaims {
  /** Provisioning token (shared secret). */
  cht: string;
  /** Protocol security enabled while provisioning. */
  chs: boolean;
  /** Comma-separated broker URLs. */
  chu: string;
  chsrv: string;
  /** Provision by default. */
  chpd: boolean;
  chrd: string;
  chf: string;
  chusr: string;
  chpwd: string;
  extensions: Record<string, unknown> | null;
  /** Organisation; `choria` when the token has none. */
  ou: string;
  v2: boolean;
  update: boolean;
  purpose: string;
  tcs: string;
  public_key: string;
  /** Issuer expiry, Unix seconds. */
  issexp?: number;
  iss: string;
  sub: string;
  aud: string[];
  exp?: number;
  nbf?: number;
  iat?: number;
  jti: string;
}

export interface VerifyOptions {
  /** Current time in Unix seconds (fractions allowed); defaults to the clock. */
  now?: number;
  /**
   * Tokens whose signature already verified with this very key. A site's servers usually carry
   * one and the same provisioning token, and an RSA check is the largest CPU cost of a node in the
   * jwt flow; the claims (expiry included) are still checked every time.
   */
  verified?: VerifiedTokens;
}

/** A bounded memory of tokens whose signature verified, valid for one key only. */
export class VerifiedTokens {
  readonly #tokens = new Set<string>();
  readonly #max: number;

  constructor(max = 256) {
    this.#max = max;
  }

  has(token: string): boolean {
    return this.#tokens.has(token);
  }

  add(token: string): void {
    // many distinct tokens: forget the oldest rather than grow
    if (this.#tokens.size >= this.#max) this.#tokens.delete(this.#tokens.values().next().value as string);
    this.#tokens.add(token);
  }
}

/** A token that did not pass verification (as opposed to a configuration or key-file problem). */
export class ProvisioningTokenError extends ProvisionerError {}

const PROVISIONING_PURPOSE = 'choria_provisioning';

/**
 * Verifies a provisioning token against the `jwt_verify_cert` setting (a key file path or a hex
 * Ed25519 public key) and returns its claims. The token is trimmed first (files end in newlines).
 */
export function verifyProvisioningToken(
  token: string,
  verifyCertSetting: string,
  opts?: VerifyOptions,
): ProvisioningClaims {
  const trimmed = token.trim();
  if (trimmed === '') throw new ProvisioningTokenError('no JWT received');
  if (verifyCertSetting === '') throw new Error('no JWT verification certificate configured, cannot validate JWT');
  return verifyProvisioningTokenWithKey(trimmed, loadVerificationKey(verifyCertSetting), opts);
}

/** As {@link verifyProvisioningToken} with a key already loaded by `loadVerificationKey`. */
export function verifyProvisioningTokenWithKey(
  token: string,
  key: VerificationKey,
  opts?: VerifyOptions,
): ProvisioningClaims {
  const trimmed = token.trim();
  if (trimmed === '') throw new ProvisioningTokenError('no JWT received');
  const now = opts?.now ?? Date.now() / 1000;

  let claims: ProvisioningClaims;
  try {
    claims = parseAndVerify(trimmed, key, now, opts?.verified);
  } catch (err) {
    if (err instanceof JwtError) throw new ProvisioningTokenError(`could not parse provisioner token: ${err.message}`);
    throw err;
  }

  if (claims.sub !== PROVISIONING_PURPOSE && claims.purpose !== PROVISIONING_PURPOSE) {
    throw new ProvisioningTokenError('not a provisioning token');
  }
  if (claims.ou === '') claims.ou = DEFAULT_ORG;
  // Upstream reports every failure of the trust-chain expiry rule as a bare "token is expired".
  if (claims.tcs !== '' && !issuerExpiryValid(claims, now)) throw new ProvisioningTokenError('token is expired');
  return claims;
}

/**
 * The claims as upstream hands them to the helper (`jwt` in the helper input): upstream's key order and
 * Go's omit-empty rules; `extensions` is always present (null when absent).
 */
export function claimsForHelper(claims: ProvisioningClaims): Record<string, unknown> {
  const out: Record<string, unknown> = { cht: claims.cht, chs: claims.chs };
  putString(out, 'chu', claims.chu);
  putString(out, 'chsrv', claims.chsrv);
  out['chpd'] = claims.chpd;
  putString(out, 'chrd', claims.chrd);
  putString(out, 'chf', claims.chf);
  putString(out, 'chusr', claims.chusr);
  putString(out, 'chpwd', claims.chpwd);
  out['extensions'] = claims.extensions === null ? null : sortKeysLikeGoMap(claims.extensions);
  putString(out, 'ou', claims.ou);
  if (claims.v2) out['v2'] = true;
  if (claims.update) out['update'] = true;
  out['purpose'] = claims.purpose;
  putString(out, 'tcs', claims.tcs);
  putString(out, 'public_key', claims.public_key);
  putDate(out, 'issexp', claims.issexp);
  putString(out, 'iss', claims.iss);
  putString(out, 'sub', claims.sub);
  if (claims.aud.length > 0) out['aud'] = [...claims.aud];
  putDate(out, 'exp', claims.exp);
  putDate(out, 'nbf', claims.nbf);
  putDate(out, 'iat', claims.iat);
  putString(out, 'jti', claims.jti);
  return out;
}

function parseAndVerify(
  token: string,
  key: VerificationKey,
  now: number,
  verified: VerifiedTokens | undefined,
): ProvisioningClaims {
  const jwt = parseCompactJwt(token);
  const decoded = decodeJwtClaims(jwt, 'ProvisioningClaims', PROVISIONING_CLAIMS_SPEC);
  const alg = acceptedAlgorithm(jwt.header);
  const signature = decodeJwtSignature(jwt);
  assertKeyFamily(alg, key);
  if (verified?.has(token) !== true) {
    verifyJwtSignature(jwt, alg, key.key, signature);
    verified?.add(token);
  }

  const timeProblems: string[] = [];
  if (decoded.exp !== undefined && !(now < decoded.exp)) timeProblems.push('token is expired');
  if (decoded.nbf !== undefined && now < decoded.nbf) timeProblems.push('token is not valid yet');
  if (timeProblems.length > 0) throw new JwtError(`${JwtErrorCategory.invalidClaims}: ${timeProblems.join(', ')}`);

  const claims: ProvisioningClaims = {
    cht: decoded.cht ?? '',
    chs: decoded.chs ?? false,
    chu: decoded.chu ?? '',
    chsrv: decoded.chsrv ?? '',
    chpd: decoded.chpd ?? false,
    chrd: decoded.chrd ?? '',
    chf: decoded.chf ?? '',
    chusr: decoded.chusr ?? '',
    chpwd: decoded.chpwd ?? '',
    extensions: decoded.extensions ?? null,
    ou: decoded.ou ?? '',
    v2: decoded.v2 ?? false,
    update: decoded.update ?? false,
    purpose: decoded.purpose ?? '',
    tcs: decoded.tcs ?? '',
    public_key: decoded.public_key ?? '',
    iss: decoded.iss ?? '',
    sub: decoded.sub ?? '',
    aud: decoded.aud ?? [],
    jti: decoded.jti ?? '',
  };
  if (decoded.issexp !== undefined) claims.issexp = decoded.issexp;
  if (decoded.exp !== undefined) claims.exp = decoded.exp;
  if (decoded.nbf !== undefined) claims.nbf = decoded.nbf;
  if (decoded.iat !== undefined) claims.iat = decoded.iat;
  return claims;
}

function assertKeyFamily(alg: JwtAlgorithm, key: VerificationKey): void {
  const needed = alg === 'EdDSA' ? 'ed25519' : 'rsa';
  if (key.kind !== needed) {
    throw new JwtError(
      `${JwtErrorCategory.unverifiable}: error while executing keyfunc: ${needed} public key required`,
    );
  }
}

// Accepted only for a chain-issued token (`C-` issuer) with an issuer expiry that has not passed;
// unlike `exp`, now == min(issexp, exp) still passes.
function issuerExpiryValid(claims: ProvisioningClaims, now: number): boolean {
  if (!claims.iss.startsWith(CHAIN_ISSUER_PREFIX) || claims.issexp === undefined) return false;
  const expiry = claims.exp === undefined ? claims.issexp : Math.min(claims.issexp, claims.exp);
  return !(now > expiry);
}

function putString(out: Record<string, unknown>, key: string, value: string): void {
  if (value !== '') out[key] = value;
}

// Go writes NumericDate as whole seconds, truncated.
function putDate(out: Record<string, unknown>, key: string, value: number | undefined): void {
  if (value !== undefined) out[key] = Math.floor(value);
}

// Go marshals maps with sorted keys, at every depth.
function sortKeysLikeGoMap(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item: unknown) => sortKeysLikeGoMap(item));
  if (!isPlainObject(value)) return value;
  const sorted: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort(compareUtf8)) sorted[key] = sortKeysLikeGoMap(value[key]);
  return sorted;
}

function compareUtf8(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

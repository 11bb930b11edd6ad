// Checks a server JWT received in `configure` the way the node (and the broker it connects to
// afterwards) would judge it: purpose, identity, public key, validity, signature,
// and for chain-issued tokens the full chain (organisation signature, then chain signature). A real node writes the
// file whatever it contains and simply fails to connect later; the simulator records each problem as a violation.
import { verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { ed25519PublicFromHex, rsaPublicFromPem } from './keys.js';
import { ksuidSeconds } from './ksuid.js';

export interface ServerJwtVerification {
  /** Organisation issuer public key (64 hex): verifies chain-issued (`C-...`) and issuer-signed tokens */
  issuerPublicHex?: string;
  /** RSA public key (SPKI PEM, PKCS#1 PEM or certificate) of the provisioner's `jwt_signing_key` */
  signerPublicPem?: string;
  /** Ed25519 public key (64 hex) of the provisioner's `jwt_signing_key` */
  signerEd25519PublicHex?: string;
}

/** Parsed verification material; build once per fleet. */
export interface ServerJwtKeys {
  issuer?: KeyObject;
  issuerHex?: string;
  rsaSigner?: KeyObject;
  edSigner?: KeyObject;
  edSignerHex?: string;
  /** per-fleet memory of chain issuers, which every token of one provisioner repeats */
  memo?: ChainMemo;
}

/**
 * Every server JWT a provisioner mints names the same chain issuer, so its key and the organisation
 * issuer's signature over it are worked out once: the same KeyObject also lets jose reuse the
 * CryptoKey it derives from it, instead of importing the key again for every node.
 */
export interface ChainMemo {
  keys: Map<string, KeyObject>;
  /** `<id>.<public key>` + chain tcs -> whether the organisation issuer signed it */
  issuerSigned: Map<string, boolean>;
}

const CHAIN_MEMO_LIMIT = 64;

function remember<V>(map: Map<string, V>, key: string, make: () => V): V {
  const known = map.get(key);
  if (known !== undefined) return known;
  const value = make();
  if (map.size >= CHAIN_MEMO_LIMIT) map.clear();
  map.set(key, value);
  return value;
}

export function parseServerJwtVerification(v: ServerJwtVerification | undefined): ServerJwtKeys | undefined {
  if (v === undefined) return undefined;
  const keys: ServerJwtKeys = {};
  if (v.issuerPublicHex !== undefined) {
    keys.issuer = ed25519PublicFromHex(v.issuerPublicHex);
    keys.issuerHex = v.issuerPublicHex.trim().toLowerCase();
  }
  if (v.signerPublicPem !== undefined) keys.rsaSigner = rsaPublicFromPem(v.signerPublicPem);
  if (v.signerEd25519PublicHex !== undefined) {
    keys.edSigner = ed25519PublicFromHex(v.signerEd25519PublicHex);
    keys.edSignerHex = v.signerEd25519PublicHex.trim().toLowerCase();
  }
  if (keys.issuer === undefined && keys.rsaSigner === undefined && keys.edSigner === undefined) return undefined;
  keys.memo = { keys: new Map(), issuerSigned: new Map() };
  return keys;
}

export interface ServerJwtCheckInput {
  token: string;
  identity: string;
  /** hex public key from the node's last gen25519, if any */
  nodePublicKeyHex: string | undefined;
  keys: ServerJwtKeys | undefined;
  nowMs: number;
}

export interface ServerJwtCheckResult {
  claims: Record<string, unknown> | undefined;
  problems: string[];
}

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'EdDSA'];

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function hexOk(s: string): boolean {
  return s.length > 0 && s.length % 2 === 0 && /^[0-9a-fA-F]+$/.test(s);
}

async function signatureVerifies(token: string, key: KeyObject, nowSec: number): Promise<string | undefined> {
  try {
    await jwtVerify(token, key, { algorithms: ALGORITHMS, currentDate: new Date(nowSec * 1000) });
    return undefined;
  } catch (e) {
    return errorText(e);
  }
}

function claimTypes(claims: Record<string, unknown>, problems: string[]): void {
  const strings = ['identity', 'ou', 'purpose', 'public_key', 'iss', 'tcs', 'jti'];
  for (const k of strings) {
    if (claims[k] !== undefined && claims[k] !== null && typeof claims[k] !== 'string')
      problems.push(`claim ${k} is not a string`);
  }
  for (const k of ['exp', 'nbf', 'iat', 'issexp']) {
    if (claims[k] !== undefined && claims[k] !== null && typeof claims[k] !== 'number')
      problems.push(`claim ${k} is not a number`);
  }
  const c = claims['collectives'];
  if (!Array.isArray(c) || c.length === 0 || !c.every((x) => typeof x === 'string')) {
    problems.push('claim collectives must be a non-empty array of strings');
  }
}

async function checkChain(
  token: string,
  claims: Record<string, unknown>,
  keys: ServerJwtKeys,
  nowSec: number,
  problems: string[],
): Promise<void> {
  const iss = typeof claims['iss'] === 'string' ? claims['iss'] : '';
  const tcs = typeof claims['tcs'] === 'string' ? claims['tcs'] : '';
  const jti = typeof claims['jti'] === 'string' ? claims['jti'] : '';
  const dot = iss.indexOf('.');
  if (!iss.startsWith('C-') || dot < 0) {
    problems.push(`chained token issuer ${JSON.stringify(iss)} is not of the form C-<id>.<public key>`);
    return;
  }
  const chainId = iss.slice(2, dot);
  const chainPkHex = iss.slice(dot + 1);
  const tdot = tcs.lastIndexOf('.');
  if (tdot < 0) {
    problems.push('trust chain signature (tcs) is not of the form <chain tcs>.<signature>');
    return;
  }
  const chainTcs = tcs.slice(0, tdot);
  const ownSig = tcs.slice(tdot + 1);
  if (!hexOk(chainPkHex) || chainPkHex.length !== 64) {
    problems.push('chain issuer public key in iss is not 64 hex characters');
    return;
  }
  const memo = keys.memo;
  const chainKey =
    memo === undefined
      ? ed25519PublicFromHex(chainPkHex)
      : remember(memo.keys, chainPkHex, () => ed25519PublicFromHex(chainPkHex));
  const issuer = keys.issuer;
  if (issuer !== undefined) {
    const signedData = `${chainId}.${chainPkHex.toLowerCase()}`;
    const signedByIssuer = (): boolean =>
      hexOk(chainTcs) && cryptoVerify(null, Buffer.from(signedData, 'utf8'), issuer, Buffer.from(chainTcs, 'hex'));
    const signed =
      memo === undefined ? signedByIssuer() : remember(memo.issuerSigned, `${signedData} ${chainTcs}`, signedByIssuer);
    if (!signed) {
      problems.push('chain issuer was not signed by the organisation issuer');
    }
  } else if (keys.edSignerHex !== undefined && keys.edSignerHex !== chainPkHex.toLowerCase()) {
    problems.push('chain issuer public key differs from the configured signer key');
  }
  if (
    !hexOk(ownSig) ||
    !cryptoVerify(null, Buffer.from(`${jti}.${chainTcs}`, 'utf8'), chainKey, Buffer.from(ownSig, 'hex'))
  ) {
    problems.push('trust chain signature over <jti>.<chain tcs> does not verify with the chain issuer key');
  }
  const sigProblem = await signatureVerifies(token, chainKey, nowSec);
  if (sigProblem !== undefined) problems.push(`signature with the chain issuer key: ${sigProblem}`);
  if (ksuidSeconds(jti) !== claims['iat'])
    problems.push('id is not based on issued time (jti KSUID time differs from iat)');
  const issexp = claims['issexp'];
  if (typeof issexp !== 'number') {
    problems.push('chained token has no issexp');
  } else {
    const exp = typeof claims['exp'] === 'number' ? Math.min(claims['exp'], issexp) : issexp;
    if (nowSec > exp) problems.push('chain issuer has expired');
  }
}

export async function checkServerJwt(input: ServerJwtCheckInput): Promise<ServerJwtCheckResult> {
  const token = input.token.trim();
  const problems: string[] = [];
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(token) as Record<string, unknown>;
    decodeProtectedHeader(token);
  } catch (e) {
    return { claims: undefined, problems: [`not a JWT: ${errorText(e)}`] };
  }
  claimTypes(claims, problems);
  if (claims['purpose'] !== 'choria_server')
    problems.push(`purpose is ${JSON.stringify(claims['purpose'] ?? null)}, expected "choria_server"`);
  if (claims['identity'] !== input.identity)
    problems.push(
      `identity is ${JSON.stringify(claims['identity'] ?? null)}, expected ${JSON.stringify(input.identity)}`,
    );
  const pk = typeof claims['public_key'] === 'string' ? claims['public_key'].toLowerCase() : undefined;
  if (input.nodePublicKeyHex === undefined)
    problems.push('the node has no ed25519 key: gen25519 was not called before configure');
  else if (pk !== input.nodePublicKeyHex.toLowerCase())
    problems.push("public_key is not the key from the node's last gen25519");
  const nowSec = Math.floor(input.nowMs / 1000);
  if (typeof claims['exp'] === 'number' && nowSec >= claims['exp']) problems.push('token is expired');
  if (typeof claims['nbf'] === 'number' && nowSec < claims['nbf']) problems.push('token is not valid yet');

  const keys = input.keys;
  if (keys === undefined) return { claims, problems };
  const chained =
    (typeof claims['iss'] === 'string' && claims['iss'].startsWith('C-')) ||
    (typeof claims['tcs'] === 'string' && claims['tcs'] !== '');
  if (chained) {
    await checkChain(token, claims, keys, nowSec, problems);
    return { claims, problems };
  }
  const candidates = [keys.rsaSigner, keys.edSigner, keys.issuer].filter((k): k is KeyObject => k !== undefined);
  const failures: string[] = [];
  for (const key of candidates) {
    const problem = await signatureVerifies(token, key, nowSec);
    if (problem === undefined) return { claims, problems };
    failures.push(problem);
  }
  problems.push(`signature does not verify with the configured key(s): ${failures.join('; ')}`);
  return { claims, problems };
}

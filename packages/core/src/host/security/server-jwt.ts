// Minting the node's server token (`features.ed25519`).
import { sign as cryptoSign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ksuid } from '../../util/ids.js';
import { errorText } from '../../util/values.js';
import type { Decoded, ServerPermissions } from './go-decode.js';
import { formatDuration } from '../../util/duration.js';
import { goJsonStringify, type GoJsonValue } from '../../util/go-json.js';
import { decodeHexStrict } from '../../util/go-hex.js';
import { JwtError, parseJwtUnverified, signCompactJwt } from './jwt-compact.js';
import { ed25519KeyFromSeed, ed25519SeedFromFileContent } from '../../util/ed25519.js';
import { parseSigningKeyFile, type SigningKey } from './keys.js';
import type { ServerClaimsInput } from './server-claims.js';
import { CHAIN_ISSUER_PREFIX, CLIENT_ID_CLAIMS_SPEC, DEFAULT_ORG } from './claim-specs.js';

export { parseServerClaims, ServerClaimsError, type ServerClaimsInput } from './server-claims.js';

export interface MintServerTokenInput {
  /** Node identity. */
  identity: string;
  /** The node's Ed25519 public key from `gen25519`, hex. */
  publicKeyHex: string;
  /** `jwt_signing_key`: RSA private key PEM or 64-byte hex Ed25519 seed file; re-read on every call. */
  signingKeyPath: string;
  /** `jwt_signing_token`: chain-issuer client token; re-read on every call. */
  signingTokenPath?: string;
  /** `server_jwt_validity` in milliseconds. */
  defaultValidityMs: number;
  /** The helper's `configuration`. */
  configuration: Readonly<Record<string, string>>;
  /** The helper's decoded `server_claims` (see `parseServerClaims`). */
  serverClaims?: ServerClaimsInput | null;
  /** Current time in Unix seconds (fractions allowed); defaults to the clock. */
  now?: number;
  onWarning?: (msg: string) => void;
  /** The 16 random bytes of the `jti` KSUID; fresh random bytes when absent (tests pin them). */
  ksuidRandom?: Uint8Array;
  /** parsed signing keys and chain tokens kept between calls (one per provisioner); default: none kept */
  keys?: SigningKeyCache;
}

/**
 * The signing files are read again for every token (a replaced file takes effect at once), but
 * what they hold is parsed only when their content changed: importing an Ed25519 seed through
 * PKCS#8 DER costs OpenSSL about as much as the rest of a node's token.
 */
export class SigningKeyCache {
  #keyFile:
    { readonly path: string; readonly content: Buffer; readonly asSeed: boolean; readonly key: SigningKey } | undefined;
  #token: { readonly text: string; readonly issuer: ChainIssuer } | undefined;

  /** The key of a `jwt_signing_key` file: as the file says (RSA or seed), or as a chain signer's seed. */
  signingKey(content: Buffer, path: string, asSeed: boolean): SigningKey {
    const k = this.#keyFile;
    if (k !== undefined && k.path === path && k.asSeed === asSeed && k.content.equals(content)) return k.key;
    const key: SigningKey = asSeed
      ? { kind: 'ed25519', alg: 'EdDSA', key: ed25519KeyFromSeed(ed25519SeedFromFileContent(content, path)) }
      : parseSigningKeyFile(content, path);
    this.#keyFile = { path, content: Buffer.from(content), asSeed, key };
    return key;
  }

  chainIssuer(tokenText: string): ChainIssuer {
    if (this.#token?.text === tokenText) return this.#token.issuer;
    const issuer = parseChainIssuer(tokenText);
    this.#token = { text: tokenText, issuer };
    return issuer;
  }
}

const HOUR_MS = 3_600_000;
const ISSUER = 'Choria Provisioner';
const SERVER_PURPOSE = 'choria_server';
const CLIENT_ID_PURPOSE = 'choria_client_id';

interface ServerTokenClaims {
  identity: string;
  collectives: string[];
  permissions?: ServerPermissions;
  ou: string;
  pub_subjects: string[];
  purpose: string;
  tcs: string;
  public_key: string;
  issexp?: number;
  iss: string;
  exp: number;
  nbf: number;
  iat: number;
  jti: string;
}

interface ChainIssuer {
  jti: string;
  publicKey: string;
  tcs: string;
  exp: number;
}

/** Builds and signs the server token for a node, applying upstream's rules (docs/helpers.md, server claims). */
export function mintServerToken(input: MintServerTokenInput): string {
  if (input.publicKeyHex === '') throw new Error('no ed25519 public key set');
  if (input.signingKeyPath === '') throw new Error('no jwt signing key configured using jwt_signing_key');
  if (input.defaultValidityMs === 0) throw new Error('no default validity configured');
  if (!Number.isFinite(input.defaultValidityMs) || input.defaultValidityMs < 0) {
    throw new Error(`invalid default server JWT validity ${input.defaultValidityMs} ms: must be positive`);
  }

  const nowMs = input.now === undefined ? Date.now() : input.now * 1000;
  const { org, collectives, pubSubjects, permissions, validityMs } = claimInputs(input, nowMs);
  const publicKey = decodeHexStrict(input.publicKeyHex);
  if (input.identity === '') throw new Error('identity is required');
  if (collectives.length === 0) throw new Error('at least one collective is required');

  const iat = Math.floor(nowMs / 1000);
  const claims: ServerTokenClaims = {
    identity: input.identity,
    collectives,
    ou: org,
    pub_subjects: pubSubjects,
    purpose: SERVER_PURPOSE,
    tcs: '',
    public_key: publicKey.toString('hex'),
    iss: ISSUER,
    exp: Math.floor((iat * 1000 + validityMs) / 1000),
    nbf: iat,
    iat,
    jti: ksuid(iat, input.ksuidRandom),
  };
  if (permissions !== undefined) claims.permissions = permissions;

  const keys = input.keys ?? new SigningKeyCache();
  let signer: SigningKey;
  if (input.signingTokenPath !== undefined && input.signingTokenPath !== '') {
    const tokenText = readText(input.signingTokenPath, 'could not read jwt_signing_token');
    signer = keys.signingKey(readSigningKeyFile(input.signingKeyPath), input.signingKeyPath, true);
    addChainIssuer(claims, keys.chainIssuer(tokenText), signer.key);
  } else {
    signer = keys.signingKey(readSigningKeyFile(input.signingKeyPath), input.signingKeyPath, false);
  }

  return signToken(serverClaimsJson(claims), signer);
}

function claimInputs(
  input: MintServerTokenInput,
  nowMs: number,
): { org: string; collectives: string[]; pubSubjects: string[]; permissions?: ServerPermissions; validityMs: number } {
  const configuration = input.configuration;
  let org = DEFAULT_ORG;
  let validityMs = input.defaultValidityMs;
  let collectives = ['mcollective'];
  let pubSubjects: string[] = [];
  let permissions: ServerPermissions | undefined;

  if (
    Object.hasOwn(configuration, 'plugin.security.provider') &&
    configuration['plugin.security.provider'] === 'choria'
  ) {
    collectives = ['choria'];
  }
  const configured = Object.hasOwn(configuration, 'collectives') ? configuration['collectives'] : undefined;
  if (configured !== undefined) collectives = configured.split(',');

  const sc = input.serverClaims;
  if (sc !== undefined && sc !== null) {
    if (sc.ou !== undefined && sc.ou !== '') org = sc.ou;
    if (sc.exp !== undefined) {
      validityMs = sc.exp * 1000 - nowMs;
      if (validityMs === 0) input.onWarning?.(`Could not parse expires claim ${sc.exp}`);
    }
    if (sc.collectives !== undefined && sc.collectives.length > 0) collectives = [...sc.collectives];
    if (sc.pub_subjects !== undefined && sc.pub_subjects.length > 0) pubSubjects = [...sc.pub_subjects];
    if (sc.permissions !== undefined) permissions = { ...sc.permissions };
  }

  if (validityMs <= HOUR_MS) {
    input.onWarning?.(
      `Server validity ${formatDuration(validityMs)} is too short, ` +
        `setting to default ${formatDuration(input.defaultValidityMs)}`,
    );
    validityMs = input.defaultValidityMs;
  }
  return permissions === undefined
    ? { org, collectives, pubSubjects, validityMs }
    : { org, collectives, pubSubjects, permissions, validityMs };
}

// The client token in `jwt_signing_token`, parsed without verification as upstream does.
function parseChainIssuer(tokenText: string): ChainIssuer {
  let decoded: Decoded<typeof CLIENT_ID_CLAIMS_SPEC>;
  try {
    decoded = parseJwtUnverified(tokenText.trim(), 'ClientIDClaims', CLIENT_ID_CLAIMS_SPEC);
  } catch (err) {
    if (err instanceof JwtError) throw new Error(`could not parse jwt_signing_token: ${err.message}`, { cause: err });
    throw err;
  }
  if (decoded.purpose !== CLIENT_ID_PURPOSE) throw new Error('not a client token');
  const tcs = decoded.tcs ?? '';
  if (tcs === '') throw new Error('no Trust Chain Signature claim in JWT Signing Token');
  const jti = decoded.jti ?? '';
  const publicKey = decoded.public_key ?? '';
  if (jti === '') throw new Error('id not set');
  if (publicKey === '') throw new Error('public key not set');
  if (decoded.exp === undefined) throw new Error('issuer has no expiry');
  return { jti, publicKey, tcs, exp: decoded.exp };
}

function addChainIssuer(claims: ServerTokenClaims, issuer: ChainIssuer, seedKey: KeyObject): void {
  claims.iss = `${CHAIN_ISSUER_PREFIX}${issuer.jti}.${issuer.publicKey}`;
  claims.issexp = issuer.exp;
  if (issuer.exp < claims.exp) claims.exp = issuer.exp;
  // Verifiers split the issuer into exactly "<id>.<public key>".
  if (claims.iss.slice(CHAIN_ISSUER_PREFIX.length).split('.').length !== 2) throw new Error('invalid issuer data');
  const signature = cryptoSign(null, Buffer.from(`${claims.jti}.${issuer.tcs}`, 'utf8'), seedKey);
  claims.tcs = `${issuer.tcs}.${signature.toString('hex')}`;
}

// Claims in the order and with the omit-empty rules of Go's ServerClaims struct.
function serverClaimsJson(claims: ServerTokenClaims): string {
  const out: Record<string, GoJsonValue> = { identity: claims.identity, collectives: claims.collectives };
  if (claims.permissions !== undefined) out['permissions'] = permissionsJson(claims.permissions);
  out['ou'] = claims.ou;
  if (claims.pub_subjects.length > 0) out['pub_subjects'] = claims.pub_subjects;
  out['purpose'] = claims.purpose;
  if (claims.tcs !== '') out['tcs'] = claims.tcs;
  if (claims.public_key !== '') out['public_key'] = claims.public_key;
  if (claims.issexp !== undefined) out['issexp'] = Math.floor(claims.issexp);
  out['iss'] = claims.iss;
  out['exp'] = Math.floor(claims.exp);
  out['nbf'] = claims.nbf;
  out['iat'] = claims.iat;
  out['jti'] = claims.jti;
  return goJsonStringify(out);
}

function permissionsJson(permissions: ServerPermissions): Record<string, GoJsonValue> {
  const out: Record<string, GoJsonValue> = {};
  if (permissions.submission === true) out['submission'] = true;
  if (permissions.streams === true) out['streams'] = true;
  if (permissions.governor === true) out['governor'] = true;
  if (permissions.service_host === true) out['service_host'] = true;
  return out;
}

function signToken(payloadJson: string, signer: SigningKey): string {
  try {
    return signCompactJwt(payloadJson, signer.alg, signer.key);
  } catch (err) {
    throw new Error(`could not sign token using key: ${errorText(err)}`, { cause: err });
  }
}

function readSigningKeyFile(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new Error(`could not read signing key: ${errorText(err)}`, { cause: err });
  }
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`${what}: ${errorText(err)}`, { cause: err });
  }
}

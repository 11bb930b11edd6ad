// Client credentials of the `choria` (ed25519 + JWT) provider: the JWT text, its callerid claim and
// the ed25519 key from the 64-hex seed file.
import { sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { decodeJwt } from 'jose';
import { ed25519KeyFromSeed, ed25519PublicHex, readEd25519SeedFile } from '../../util/ed25519.js';
import { SecurityError } from '../errors.js';

export interface ChoriaCredentials {
  /** the client JWT, trimmed */
  readonly token: string;
  /** the JWT's `callerid` claim, verbatim */
  readonly callerId: string;
  readonly privateKey: KeyObject;
  /** raw 32-byte public key, hex */
  readonly publicKeyHex: string;
}

/** The `callerid` claim of a JWT, read without verifying it (the broker and servers verify). */
export function callerIdFromJwt(token: string, label: string): string {
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(token);
  } catch (err) {
    throw new SecurityError(`could not decode client JWT ${label}: ${(err as Error).message}`);
  }
  const callerId = claims['callerid'];
  if (typeof callerId !== 'string' || callerId === '')
    throw new SecurityError(`client JWT ${label} has no "callerid" claim`);
  const publicKey = claims['public_key'];
  if (publicKey !== undefined && typeof publicKey !== 'string')
    throw new SecurityError(`client JWT ${label} has a non-string "public_key" claim`);
  return callerId;
}

function jwtPublicKey(token: string): string | undefined {
  const pk = decodeJwt(token)['public_key'];
  return typeof pk === 'string' && pk !== '' ? pk.toLowerCase() : undefined;
}

export function readClientJwt(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new SecurityError(`could not read client JWT ${path}: ${(err as Error).message}`);
  }
  const token = text.trim();
  if (token === '') throw new SecurityError(`client JWT ${path} is empty`);
  return token;
}

/** Builds credentials from already loaded material; checks the JWT's public key matches the seed. */
export function choriaCredentials(token: string, privateKey: KeyObject, label: string): ChoriaCredentials {
  const callerId = callerIdFromJwt(token, label);
  const publicKeyHex = ed25519PublicHex(privateKey);
  const claimed = jwtPublicKey(token);
  if (claimed !== undefined && claimed !== publicKeyHex) {
    throw new SecurityError(
      `client JWT ${label} is for public key ${claimed}, but the seed's public key is ${publicKeyHex}`,
    );
  }
  return { token, callerId, privateKey, publicKeyHex };
}

export function loadChoriaCredentials(
  tokenFile: string | undefined,
  seedFile: string | undefined,
  source: string,
): ChoriaCredentials {
  if (tokenFile === undefined || tokenFile === '') {
    throw new SecurityError(
      `the choria security provider needs a client JWT file (plugin.security.choria.token_file) in ${source}`,
    );
  }
  if (seedFile === undefined || seedFile === '') {
    throw new SecurityError(
      `the choria security provider needs an ed25519 seed file (plugin.security.choria.seed_file) in ${source}`,
    );
  }
  return choriaCredentials(readClientJwt(tokenFile), ed25519KeyFromSeed(readEd25519SeedFile(seedFile)), tokenFile);
}

/** NATS user-JWT authentication: base64url (no padding) ed25519 signature of the server nonce. */
export function signNatsNonce(privateKey: KeyObject, nonce: string): string {
  return sign(null, Buffer.from(nonce, 'utf8'), privateKey).toString('base64url');
}

// The helper reply's `server_claims` object: decoded with the types of upstream's ServerClaims
// struct, so a wrongly typed value fails the whole reply as it does upstream.
import { decodeGoStruct, GoDecodeError, type ServerPermissions } from './go-decode.js';
import { CHORIA_STANDARD_CLAIMS } from './claim-specs.js';
import { ProvisionerError } from '../../util/errors.js';

export type { ServerPermissions } from './go-decode.js';

/**
 * `server_claims` as decoded; only `ou`, `exp`, `collectives`, `pub_subjects` and `permissions` are
 * used when minting, the other fields are type-checked and ignored.
 */
export interface ServerClaimsInput {
  identity?: string;
  collectives?: string[];
  permissions?: ServerPermissions;
  ou?: string;
  pub_subjects?: string[];
  purpose?: string;
  tcs?: string;
  public_key?: string;
  /** Unix seconds. */
  issexp?: number;
  iss?: string;
  sub?: string;
  aud?: string[];
  /** Absolute Unix seconds (not a relative duration). */
  exp?: number;
  nbf?: number;
  iat?: number;
  jti?: string;
}

const SERVER_CLAIMS_SPEC = {
  identity: 'string',
  collectives: 'stringArray',
  permissions: 'permissions',
  ou: 'string',
  pub_subjects: 'stringArray',
  purpose: 'string',
  ...CHORIA_STANDARD_CLAIMS,
} as const;

export class ServerClaimsError extends ProvisionerError {}

/**
 * Validates and decodes a helper's `server_claims` value: `null`/absent gives null, a wrongly typed
 * value throws {@link ServerClaimsError}. Unknown keys are dropped; keys match case-insensitively.
 */
export function parseServerClaims(value: unknown): ServerClaimsInput | null {
  if (value === undefined || value === null) return null;
  try {
    return decodeGoStruct('ServerClaims', SERVER_CLAIMS_SPEC, value);
  } catch (err) {
    if (err instanceof GoDecodeError) throw new ServerClaimsError(`invalid server_claims: ${err.message}`);
    throw err;
  }
}

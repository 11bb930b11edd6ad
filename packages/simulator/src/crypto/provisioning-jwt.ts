// The provisioning JWT a node carries, as `choria jwt provisioning` would make it.
// Every node of one protocol version shares the same token, as in a real deployment where one file
// is installed fleet-wide.
import type { KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { newKsuid } from './ksuid.js';

export interface ProvisioningJwtSigner {
  alg: 'RS256' | 'EdDSA';
  key: KeyObject;
}

export interface ProvisioningJwtParams {
  token: string;
  /** protocol security claim `chs` */
  secure: boolean;
  brokerUrls: string[];
  brokerUser?: string | undefined;
  brokerPassword?: string | undefined;
  extensions?: Record<string, unknown> | undefined;
  ou?: string | undefined;
  v2: boolean;
  update: boolean;
  /** `chpd`: the server provisions by default (`choria jwt provisioning --default`) */
  provisionDefault?: boolean;
  nowMs: number;
  /** validity in seconds (default one year, like the CLI's `--validity 1y`) */
  validitySeconds?: number;
}

/** Claims in the order Go's encoder emits them; empty "omitempty" claims are left out. */
export function provisioningClaims(p: ProvisioningJwtParams): Record<string, unknown> {
  const iat = Math.floor(p.nowMs / 1000);
  const claims: Record<string, unknown> = { cht: p.token, chs: p.secure };
  if (p.brokerUrls.length > 0) claims['chu'] = p.brokerUrls.join(',');
  claims['chpd'] = p.provisionDefault ?? false;
  if (p.brokerUser !== undefined && p.brokerUser !== '') claims['chusr'] = p.brokerUser;
  if (p.brokerPassword !== undefined && p.brokerPassword !== '') claims['chpwd'] = p.brokerPassword;
  claims['extensions'] = p.extensions ?? null;
  claims['ou'] = p.ou !== undefined && p.ou !== '' ? p.ou : 'choria';
  if (p.v2) claims['v2'] = true;
  if (p.update) claims['update'] = true;
  claims['purpose'] = 'choria_provisioning';
  claims['iss'] = 'Choria Tokens Package';
  claims['sub'] = 'choria_provisioning';
  claims['exp'] = iat + (p.validitySeconds ?? 365 * 24 * 3600);
  claims['nbf'] = iat;
  claims['iat'] = iat;
  claims['jti'] = newKsuid(iat);
  return claims;
}

/** Returns the token file text: the compact JWT followed by a newline, like the upstream samples. */
export async function signProvisioningJwt(p: ProvisioningJwtParams, signer: ProvisioningJwtSigner): Promise<string> {
  const jwt = await new SignJWT(provisioningClaims(p))
    .setProtectedHeader({ alg: signer.alg, typ: 'JWT' })
    .sign(signer.key);
  return `${jwt}\n`;
}

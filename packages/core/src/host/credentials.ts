// What a provisioned node was given that expires, and whether go-choria can be sent back to
// provisioning to renew it. The expiry is the certificate's notAfter (pki: the helper's
// `certificate`) or the server JWT's `exp` (ed25519: the token this provisioner signed). Both come
// from trusted parties (the helper, this process), never from the node.
//
// A go-choria server sent `choria_provision#reprovision` rewrites its configuration to
// `plugin.choria.server.provision=1` (and its log settings; nothing else) and restarts. At that
// start go-choria v0.30.2 switches to provisioning mode only when its provisioning JWT says to
// provision by default (`chpd`, made with `choria jwt provisioning --default`). Any other server,
// whatever security provider it ran, restarts with a configuration it cannot run with (the
// default `puppet` provider) and is stranded: such a node is never sent `reprovision`.
import { X509Certificate } from 'node:crypto';
import type { HelperJwtClaims } from './helper/types.js';

export type Renewability = { readonly renewable: true } | { readonly renewable: false; readonly reason: string };

export interface IssuedCredentials {
  /** epoch ms: when the certificate or server JWT the node was given stops being valid */
  readonly expiresAt: number;
  readonly renewability: Renewability;
}

/** notAfter of a PEM certificate (the first of a chain), or undefined when it cannot be read. */
export function certificateExpiry(pem: string): number | undefined {
  try {
    const at = Date.parse(new X509Certificate(pem).validTo);
    return Number.isFinite(at) ? at : undefined;
  } catch {
    return undefined;
  }
}

/** `exp` of a compact JWT this process signed, in epoch ms, or undefined without one. */
export function tokenExpiry(jwt: string): number | undefined {
  const payload = jwt.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const exp: unknown = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>)[
      'exp'
    ];
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `reprovision` brings the node back into provisioning mode, by go-choria's rule. */
export function renewability(claims: HelperJwtClaims | undefined): Renewability {
  if (claims?.chpd === true) return { renewable: true };
  return {
    renewable: false,
    reason:
      claims === undefined
        ? 'its provisioning JWT was not read (features.jwt is off): it may not come back from reprovision'
        : 'its provisioning JWT does not provision by default (made without --default): ' +
          'go-choria would not come back from reprovision',
  };
}

/** What a node is given by a configure: undefined when nothing of it expires. */
export function issuedCredentials(given: {
  readonly certificate: string | undefined;
  readonly serverJwt: string;
  readonly claims: HelperJwtClaims | undefined;
}): IssuedCredentials | undefined {
  const expiries = [
    given.serverJwt !== '' ? tokenExpiry(given.serverJwt) : undefined,
    given.certificate !== undefined && given.certificate !== '' ? certificateExpiry(given.certificate) : undefined,
  ].filter((t): t is number => t !== undefined);
  if (expiries.length === 0) return undefined;
  return { expiresAt: Math.min(...expiries), renewability: renewability(given.claims) };
}

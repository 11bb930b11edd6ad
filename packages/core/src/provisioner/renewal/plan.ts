// When each node renews its credentials, read from its history record alone, so every instance of
// a site and a restarted one agree without storing a plan. A node renews at a time drawn inside the
// last `windowPercent` of its credentials' validity (from its provisioning to their expiry), and no
// later than `marginMs` before the expiry. The draw is a hash of the identity and the expiry: a
// fleet provisioned in one burst renews spread over the window, and a node provisioned again (new
// credentials, a new expiry) gets a new time.
import type { RenewalSettings } from '../../config/types.js';
import type { NodeRecord } from '../history/record.js';
export { isRenewing } from '../history/record.js';

/**
 * Where a node stands with its renewal: nothing that expires (or nothing known), never to be sent
 * `reprovision` (and why: the record says), waiting for its time, due now, sent back to provisioning
 * and not provisioned again yet, or failed (until an operator resumes the renewals).
 */
export type RenewalState = 'none' | 'not-renewable' | 'scheduled' | 'due' | 'in-flight' | 'failed';

/** A number in [0, 1) from the text: FNV-1a, 32 bits. */
export function spread(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h / 2 ** 32;
}

/** What the time of a renewal is drawn from. */
export type PlanSettings = Pick<RenewalSettings, 'windowPercent' | 'marginMs'> &
  Partial<Pick<RenewalSettings, 'returnTimeoutMs'>>;

/**
 * When the node renews; undefined without credentials that expire. The draw closes `marginMs`
 * before the expiry and, where the window leaves room, a return timeout earlier still: a renewal
 * that meets a fault (a lost reply, another provisioner's lock) then still has the time a node
 * is given to come back before its credentials run out.
 */
export function renewalDueAt(r: NodeRecord, s: PlanSettings): number | undefined {
  const expiresAt = r.credentialsExpireAt;
  if (expiresAt === undefined) return undefined;
  const issuedAt = Math.min(r.provisionedAt ?? expiresAt, expiresAt);
  const opens = expiresAt - ((expiresAt - issuedAt) * s.windowPercent) / 100;
  const closes = Math.max(opens, expiresAt - s.marginMs - (s.returnTimeoutMs ?? 0));
  return Math.round(opens + spread(`${r.identity}@${expiresAt}`) * (closes - opens));
}

export function renewalState(r: NodeRecord, now: number, s: PlanSettings): RenewalState {
  if (r.credentialsExpireAt === undefined) return 'none';
  if (r.renewalError !== undefined) return 'failed';
  if (r.renewalSentAt !== undefined) return 'in-flight';
  if (r.notRenewable !== undefined) return 'not-renewable';
  return (renewalDueAt(r, s) ?? Infinity) <= now ? 'due' : 'scheduled';
}

// Bucket keys of the node history: `<site>.<identity>`, so one bucket holds every site and an
// instance watches only its own (`<site>.>`). An identity that passed the identity rule is a valid
// key as it is. A site token may hold letters, digits, - and _; any other site (empty, with a
// space or a dot) is written as `=` + base64url, which no plain token starts with. Earlier versions
// wrote identities the same way; such a key is read back to its text, which the identity rule
// then refuses.
import { whyNotIdentity } from '../../choria/identity.js';

const PLAIN_SITE = /^[-\w]+$/;

const encoded = (s: string): string => `=${Buffer.from(s, 'utf8').toString('base64url')}`;

export function siteToken(site: string): string {
  return PLAIN_SITE.test(site) ? site : encoded(site);
}

/** The key of a node; undefined for an identity that fails the identity rule (it is never recorded). */
export function historyKey(site: string, identity: string): string | undefined {
  return whyNotIdentity(identity) === undefined ? `${siteToken(site)}.${identity}` : undefined;
}

/** The watch filter of one site's keys. */
export function siteFilter(site: string): string {
  return `${siteToken(site)}.>`;
}

/** The identity a key of `site` names; undefined for a key of another site or not ours. */
export function identityOfKey(site: string, key: string): string | undefined {
  const prefix = `${siteToken(site)}.`;
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  return rest.startsWith('=') ? Buffer.from(rest.slice(1), 'base64url').toString('utf8') : rest;
}

/**
 * The key of a record of the whole site (the renewal round): `=<name>=.<site>`. No node key and no
 * site token has a `=` after its first character, so it can be neither, and the site's watch
 * (`<site>.>`) does not deliver it.
 */
export function siteRecordKey(site: string, name: string): string {
  return `=${name}=.${siteToken(site)}`;
}

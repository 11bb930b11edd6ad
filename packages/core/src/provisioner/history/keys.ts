// Bucket keys of the node history: `<site>.<identity>`, so one bucket holds every site and an
// instance watches only its own (`<site>.>`). Key tokens may hold letters, digits, - and _ (and
// the identity's dots between tokens); anything else (an empty site, a space, a leading dot) is
// written as `=` + base64url, which no plain token starts with, so every key maps back to one name.

const PLAIN_SITE = /^[-\w]+$/;
const PLAIN_IDENTITY = /^[-\w]+(?:\.[-\w]+)*$/;

const encoded = (s: string): string => `=${Buffer.from(s, 'utf8').toString('base64url')}`;

export function siteToken(site: string): string {
  return PLAIN_SITE.test(site) ? site : encoded(site);
}

export function historyKey(site: string, identity: string): string {
  return `${siteToken(site)}.${PLAIN_IDENTITY.test(identity) ? identity : encoded(identity)}`;
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
  if (rest.startsWith('=')) return Buffer.from(rest.slice(1), 'base64url').toString('utf8');
  return PLAIN_IDENTITY.test(rest) ? rest : undefined;
}

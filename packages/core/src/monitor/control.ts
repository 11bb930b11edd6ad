// The mutating operations of the monitor port (POST /pause, /resume, /renewals/resume, /nodes/<id>/release,
// /nodes/<id>/retry) for the provisioners of one process, and who may see a site's nodes. Each site sets its own
// `monitor_api_token`; a request acts on the sites whose token it presents (or on the one named by
// ?site=), so one port can serve sites run by different teams. Without any token configured the
// operations are refused: the port listens on every interface by default.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ControlRequest } from '../provisioner/queries.js';
import type { Provisioner, RetryAnswer } from '../provisioner/provisioner.js';
import { whyNotIdentity } from '../choria/identity.js';

export interface ControlAnswer {
  readonly status: 200 | 400 | 401 | 403 | 404 | 409;
  readonly body: { error?: string; sites?: { site: string; result: string }[] };
}

// compared as digests, so the comparison neither leaks the length nor the position of a difference
const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();
function sameToken(presented: string, configured: string): boolean {
  return timingSafeEqual(digest(presented), digest(configured));
}

/**
 * Whether a request presenting `token` may see the nodes of `p` (their states, steps and last
 * errors): always when the site sets no monitor_api_token, else only with that token.
 */
export function nodesVisible(p: Provisioner, token: string | undefined): boolean {
  const configured = p.config.monitorApiToken;
  return configured === '' || (token !== undefined && token !== '' && sameToken(token, configured));
}

/** Carries out a control request against `provisioners`; the HTTP layer only maps the answer. */
export function controlProvisioners(provisioners: readonly Provisioner[], req: ControlRequest): ControlAnswer {
  const protectedSites = provisioners.filter((p) => p.config.monitorApiToken !== '');
  if (protectedSites.length === 0)
    return { status: 403, body: { error: 'control requests are disabled: no site sets monitor_api_token' } };
  if (req.token === undefined || req.token === '')
    return { status: 401, body: { error: 'a bearer token is required (Authorization: Bearer <monitor_api_token>)' } };
  const presented = req.token;
  let targets = protectedSites.filter((p) => sameToken(presented, p.config.monitorApiToken));
  if (targets.length === 0) return { status: 401, body: { error: 'the token matches no site' } };
  if (req.site !== undefined) {
    targets = targets.filter((p) => p.config.site === req.site);
    if (targets.length === 0)
      return { status: 404, body: { error: `no site ${JSON.stringify(req.site)} for this token` } };
  }
  if ((req.action === 'release' || req.action === 'retry') && (req.identity === undefined || req.identity === '')) {
    return { status: 400, body: { error: `${req.action} needs a node: POST /nodes/<identity>/${req.action}` } };
  }
  // the identity rule, where the identity enters: refused (logged and counted by each site) before anything acts
  const why = req.identity === undefined ? undefined : whyNotIdentity(req.identity);
  if (why !== undefined) {
    for (const p of targets) p.refusals.refuse(req.identity ?? '', why, 'control');
    return { status: 400, body: { error: `${req.action} refused: the node is not a valid identity (${why})` } };
  }
  // a paused site queues nothing: a retry that no site can take is a conflict, said per site
  const nowhere = req.action === 'retry' && targets.every((p) => p.paused);
  const sites = targets.map((p) => ({ site: p.config.site, result: act(p, req) }));
  return { status: nowhere ? 409 : 200, body: { sites } };
}

const RETRY_SAID: Readonly<Record<RetryAnswer, (identity: string) => string>> = {
  queued: (id) => `queued ${id}`,
  'not-queued': (id) => `${id} is already on the list, or the queue is full`,
  paused: (id) => `not queued ${id}: the site is paused and queues nothing; resume it first`,
  'not-an-identity': () => 'not queued: the node is not a valid identity',
};

function act(p: Provisioner, req: ControlRequest): string {
  const identity = req.identity ?? '';
  switch (req.action) {
    case 'pause':
      if (p.paused) return 'already paused';
      p.pause();
      p.logger.warn('Paused on request through the monitor port');
      return 'paused';
    case 'resume':
      if (!p.paused) return 'already running';
      p.resume();
      p.logger.warn('Resumed on request through the monitor port');
      return 'resumed';
    case 'resume-renewals':
      if (!p.resumeRenewals()) return 'renewals are off (no renewal_choria_config)';
      p.logger.warn('Renewals resumed on request through the monitor port');
      return 'renewals resumed';
    case 'release':
      return p.release(identity) ? `released ${identity}` : `${identity} was not quarantined`;
    case 'retry':
      return RETRY_SAID[p.retry(identity)](identity);
  }
}

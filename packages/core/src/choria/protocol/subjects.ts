// NATS subjects of a provisioning network.
import { md5Hex } from './encoding.js';
import { shownIdentity, whyNotIdentity } from '../identity.js';

/** Go provisioners force collectives to `provisioning`; servers in provisioning mode only know this one. */
import { PROVISIONING_COLLECTIVE } from '../../config/choria-config.js';

export { PROVISIONING_COLLECTIVE };

const BAD_TOKEN_CHARS = /[\s.*>]/;

/** Throws unless `value` can be one NATS subject token (no dots, wildcards or whitespace). */
export function assertSubjectToken(value: string, what: string): void {
  if (value === '' || BAD_TOKEN_CHARS.test(value)) {
    throw new Error(
      `${what} ${JSON.stringify(value)} cannot be used in a NATS subject: ` +
        `it must be non-empty without ".", "*", ">" or whitespace`,
    );
  }
}

/** Lowercase hex md5 of the caller id: the reply subject token the broker permits for JWT clients. */
export function callerIdHash(callerId: string): string {
  return md5Hex(callerId);
}

export function broadcastSubject(agent: string, collective: string = PROVISIONING_COLLECTIVE): string {
  assertSubjectToken(agent, 'agent');
  return `${collective}.broadcast.agent.${agent}`;
}

/** The request subject of one node; throws unless `identity` passes the identity rule (identity.ts). */
export function directedSubject(identity: string, collective: string = PROVISIONING_COLLECTIVE): string {
  const why = whyNotIdentity(identity);
  if (why !== undefined) throw new Error(`no request is sent to the node identity ${shownIdentity(identity)}: ${why}`);
  return `${collective}.node.${identity}`;
}

/** `<collective>.reply.<md5(callerid)>.` — every reply subject of this caller starts with it. */
export function replySubjectPrefix(callerId: string, collective: string = PROVISIONING_COLLECTIVE): string {
  return `${collective}.reply.${callerIdHash(callerId)}.`;
}

export function replySubject(
  callerId: string,
  requestId: string,
  collective: string = PROVISIONING_COLLECTIVE,
): string {
  assertSubjectToken(requestId, 'request id');
  return `${replySubjectPrefix(callerId, collective)}${requestId}`;
}

/** The single wildcard subscription that receives replies to every request of this caller. */
export function replyWildcard(callerId: string, collective: string = PROVISIONING_COLLECTIVE): string {
  return `${replySubjectPrefix(callerId, collective)}>`;
}

/** `choria.lifecycle.event.<type>.<component>`; `*` is allowed for subscriptions. */
export function lifecycleSubject(type: string, component: string): string {
  if (type !== '*') assertSubjectToken(type, 'lifecycle event type');
  if (component !== '*') assertSubjectToken(component, 'lifecycle component');
  return `choria.lifecycle.event.${type}.${component}`;
}

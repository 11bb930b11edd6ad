// What active/active members tell each other over the broker, and the subjects they use. Both
// subjects live in the provisioning account, where the provisioner user may publish and subscribe
// freely, while provisioning-mode servers may publish only to choria.lifecycle.>,
// provisioning.reply.> and provisioning.registration.> (go-choria broker/network/choria_auth.go):
// a node can neither forge a member nor read the member list.
import { ProvisionerError } from '../../util/errors.js';
import { errorText } from '../../util/values.js';

export const HEARTBEAT_PROTOCOL = 'choria-provisioner:member:1';
export const DONE_PROTOCOL = 'choria-provisioner:done:1';

export interface CoordinationSubjects {
  readonly members: string;
  readonly done: string;
}

export function coordinationSubjects(group: string): CoordinationSubjects {
  return { members: `provisioning.coordination.${group}.members`, done: `provisioning.coordination.${group}.done` };
}

/** One member's announcement, sent every heartbeat and once more (leaving) when it stops. */
export interface Heartbeat {
  /** the instance's Choria identity: the node lock's owner is `<identity>.<caller id>` */
  readonly instance: string;
  /** random per process start: two processes with one identity are told apart by it */
  readonly incarnation: string;
  readonly intervalMs: number;
  readonly leaving: boolean;
  /** nodes in this instance's list (queued, being provisioned, held) */
  readonly owned: number;
  /** nodes this instance finished since it started */
  readonly provisioned: number;
  readonly version: string;
}

/** Nodes a member finished (provisioned, shut down or upgraded): the others forget them. */
export interface DoneNotice {
  readonly instance: string;
  /** the sender's process (Heartbeat.incarnation); absent from senders that predate it */
  readonly incarnation?: string;
  readonly nodes: readonly string[];
}

/** A coordination message that does not parse: dropped (and counted) by the receiver. */
export class CoordinationMessageError extends ProvisionerError {}

export function encodeHeartbeat(h: Heartbeat): string {
  return JSON.stringify({
    protocol: HEARTBEAT_PROTOCOL,
    instance: h.instance,
    incarnation: h.incarnation,
    interval_ms: h.intervalMs,
    leaving: h.leaving,
    owned: h.owned,
    provisioned: h.provisioned,
    version: h.version,
  });
}

export function encodeDone(d: DoneNotice): string {
  return JSON.stringify({ protocol: DONE_PROTOCOL, instance: d.instance, ...(d.incarnation !== undefined ? { incarnation: d.incarnation } : {}), nodes: d.nodes });
}

function objectOf(data: Uint8Array, protocol: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  } catch (err) {
    throw new CoordinationMessageError(`not JSON: ${errorText(err)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new CoordinationMessageError('not a JSON object');
  const obj = parsed as Record<string, unknown>;
  if (obj['protocol'] !== protocol) throw new CoordinationMessageError(`protocol ${JSON.stringify(obj['protocol'])} is not ${protocol}`);
  return obj;
}

function text(obj: Record<string, unknown>, key: string): string {
  const v = obj[key];
  if (typeof v !== 'string' || v === '') throw new CoordinationMessageError(`"${key}" must be a non-empty string`);
  return v;
}

function count(obj: Record<string, unknown>, key: string, min = 0): number {
  const v = obj[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) throw new CoordinationMessageError(`"${key}" must be an integer >= ${min}`);
  return v;
}

export function parseHeartbeat(data: Uint8Array): Heartbeat {
  const obj = objectOf(data, HEARTBEAT_PROTOCOL);
  const leaving = obj['leaving'];
  if (typeof leaving !== 'boolean') throw new CoordinationMessageError('"leaving" must be a boolean');
  return {
    instance: text(obj, 'instance'),
    incarnation: text(obj, 'incarnation'),
    intervalMs: count(obj, 'interval_ms', 1),
    leaving,
    owned: count(obj, 'owned'),
    provisioned: count(obj, 'provisioned'),
    version: typeof obj['version'] === 'string' ? obj['version'] : '',
  };
}

export function parseDone(data: Uint8Array): DoneNotice {
  const obj = objectOf(data, DONE_PROTOCOL);
  const nodes = obj['nodes'];
  if (!Array.isArray(nodes) || !nodes.every((n): n is string => typeof n === 'string' && n !== '')) {
    throw new CoordinationMessageError('"nodes" must be an array of non-empty strings');
  }
  const incarnation = obj['incarnation'];
  if (incarnation !== undefined && (typeof incarnation !== 'string' || incarnation === '')) throw new CoordinationMessageError('"incarnation" must be a non-empty string');
  return { instance: text(obj, 'instance'), ...(incarnation !== undefined ? { incarnation } : {}), nodes };
}

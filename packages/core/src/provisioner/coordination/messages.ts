// What active/active members tell each other over the broker, and the subjects they use. Both
// subjects live in the provisioning account, where the provisioner user may publish and subscribe
// freely, while provisioning-mode servers may publish only to choria.lifecycle.>,
// provisioning.reply.> and provisioning.registration.> (go-choria broker/network/choria_auth.go):
// a node can neither forge a member nor read the member list.
import { whyNotIdentity, type NodeIdentity } from '../../choria/identity.js';
import { ProvisionerError } from '../../util/errors.js';
import { parseForeignJson } from '../../util/json-syntax.js';
import { isPlainObject } from '../../util/values.js';

export const HEARTBEAT_PROTOCOL = 'choria-provisioner:member:1';
export const DONE_PROTOCOL = 'choria-provisioner:done:1';
export const ASK_PROTOCOL = 'choria-provisioner:ask:1';
export const GRANT_PROTOCOL = 'choria-provisioner:grant:1';
export const BUSY_PROTOCOL = 'choria-provisioner:busy:1';
export const RECEIPT_PROTOCOL = 'choria-provisioner:receipt:1';

export interface CoordinationSubjects {
  readonly members: string;
  readonly done: string;
  /** one member process's own subject, for asks and grants of queued nodes (the hand-over) */
  work(incarnation: string): string;
}

export function coordinationSubjects(group: string): CoordinationSubjects {
  return {
    members: `provisioning.coordination.${group}.members`,
    done: `provisioning.coordination.${group}.done`,
    work: (incarnation) => `provisioning.coordination.${group}.work.${incarnation}`,
  };
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
  /** nodes waiting in this instance's work queue (what an idle member may ask for); 0 from senders that predate it */
  readonly queued: number;
  readonly version: string;
  /**
   * This process's count of its heartbeats: the sender knows its own echo by it, so heartbeats
   * lost on the way (a broker outage) do not shift which send time an echo stands for. Absent
   * from leaving heartbeats and from senders that predate it.
   */
  readonly seq?: number;
}

/** Nodes a member finished (provisioned, shut down or upgraded): the others forget them. */
export interface DoneNotice {
  readonly instance: string;
  /** the sender's process (Heartbeat.incarnation); absent from senders that predate it */
  readonly incarnation?: string;
  readonly nodes: readonly NodeIdentity[];
}

/** An idle member asks a busy one (on the busy one's work subject) for up to `want` queued nodes. */
export interface AskNotice {
  readonly instance: string;
  readonly incarnation: string;
  readonly want: number;
}

/** A node handed over in a grant, with the go-choria version its startup event named, if any. */
export interface GrantedNode {
  readonly identity: NodeIdentity;
  readonly reportedVersion?: string;
}

/** The answer to an ask (on the asker's work subject): the queued nodes now the asker's, maybe none. */
export interface GrantNotice {
  readonly instance: string;
  readonly incarnation: string;
  readonly nodes: readonly GrantedNode[];
}

/**
 * Sent to a member (on its work subject) that the membership has just made the owner of nodes the
 * sender is provisioning at that moment (a member joined): leave them to the sender until its done
 * notice, instead of trying them and meeting the sender's node lock.
 */
export interface BusyNotice {
  readonly instance: string;
  readonly incarnation: string;
  readonly nodes: readonly NodeIdentity[];
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
    queued: h.queued,
    version: h.version,
    ...(h.seq !== undefined ? { seq: h.seq } : {}),
  });
}

export function encodeAsk(a: AskNotice): string {
  return JSON.stringify({ protocol: ASK_PROTOCOL, instance: a.instance, incarnation: a.incarnation, want: a.want });
}

export function encodeGrant(g: GrantNotice): string {
  return JSON.stringify({
    protocol: GRANT_PROTOCOL,
    instance: g.instance,
    incarnation: g.incarnation,
    nodes: g.nodes.map((n) =>
      n.reportedVersion !== undefined ? { identity: n.identity, version: n.reportedVersion } : { identity: n.identity },
    ),
  });
}

/**
 * The taker's answer to a grant sent as a request: it has the nodes. The giver takes back the
 * nodes of a grant no receipt answered (work-handover.ts).
 */
export function encodeReceipt(instance: string, incarnation: string, nodes: number): string {
  return JSON.stringify({ protocol: RECEIPT_PROTOCOL, instance, incarnation, nodes });
}

/** Whether `data` is a receipt for a grant of `nodes` nodes. */
export function isReceipt(data: Uint8Array, nodes: number): boolean {
  try {
    const obj = jsonObject(data);
    return obj['protocol'] === RECEIPT_PROTOCOL && obj['nodes'] === nodes;
  } catch {
    return false;
  }
}

export function encodeBusy(b: BusyNotice): string {
  return JSON.stringify({ protocol: BUSY_PROTOCOL, instance: b.instance, incarnation: b.incarnation, nodes: b.nodes });
}

export function encodeDone(d: DoneNotice): string {
  return JSON.stringify({
    protocol: DONE_PROTOCOL,
    instance: d.instance,
    ...(d.incarnation !== undefined ? { incarnation: d.incarnation } : {}),
    nodes: d.nodes,
  });
}

function jsonObject(data: Uint8Array): Record<string, unknown> {
  const text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
  const parsed = parseForeignJson(text, (why) => new CoordinationMessageError(`not JSON: ${why}`));
  if (!isPlainObject(parsed)) throw new CoordinationMessageError('not a JSON object');
  return parsed;
}

function objectOf(data: Uint8Array, protocol: string): Record<string, unknown> {
  const obj = jsonObject(data);
  if (obj['protocol'] !== protocol)
    throw new CoordinationMessageError(`protocol ${JSON.stringify(obj['protocol'])} is not ${protocol}`);
  return obj;
}

function text(obj: Record<string, unknown>, key: string): string {
  const v = obj[key];
  if (typeof v !== 'string' || v === '') throw new CoordinationMessageError(`"${key}" must be a non-empty string`);
  return v;
}

/** The sender's Choria identity: held to the identity rule, as it names the member in logs and the status. */
function instanceOf(obj: Record<string, unknown>): string {
  const v = text(obj, 'instance');
  const why = whyNotIdentity(v);
  if (why !== undefined) throw new CoordinationMessageError(`"instance" is not an identity: ${why}`);
  return v;
}

/** A process's random id: it becomes a subject token (the member's work subject), so a short plain token. */
const INCARNATION = /^[A-Za-z0-9_-]{1,64}$/;
function incarnationOf(obj: Record<string, unknown>): string {
  const v = text(obj, 'incarnation');
  if (!INCARNATION.test(v))
    throw new CoordinationMessageError('"incarnation" must be 1 to 64 letters, digits, "-" or "_"');
  return v;
}

function count(obj: Record<string, unknown>, key: string, min = 0): number {
  const v = obj[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min)
    throw new CoordinationMessageError(`"${key}" must be an integer >= ${min}`);
  return v;
}

export function parseHeartbeat(data: Uint8Array): Heartbeat {
  const obj = objectOf(data, HEARTBEAT_PROTOCOL);
  const leaving = obj['leaving'];
  if (typeof leaving !== 'boolean') throw new CoordinationMessageError('"leaving" must be a boolean');
  return {
    instance: instanceOf(obj),
    incarnation: incarnationOf(obj),
    intervalMs: count(obj, 'interval_ms', 1),
    leaving,
    owned: count(obj, 'owned'),
    provisioned: count(obj, 'provisioned'),
    queued: obj['queued'] === undefined ? 0 : count(obj, 'queued'),
    version: typeof obj['version'] === 'string' ? obj['version'] : '',
    ...(obj['seq'] === undefined ? {} : { seq: count(obj, 'seq', 1) }),
  };
}

/** A message on a member's work subject: an ask, a grant or a busy notice. */
export type WorkMessage = { readonly ask: AskNotice } | { readonly grant: GrantNotice } | { readonly busy: BusyNotice };

export function parseWorkMessage(data: Uint8Array): WorkMessage {
  const obj = jsonObject(data);
  if (obj['protocol'] === ASK_PROTOCOL) return { ask: askOf(obj) };
  if (obj['protocol'] === GRANT_PROTOCOL) return { grant: grantOf(obj) };
  if (obj['protocol'] === BUSY_PROTOCOL)
    return { busy: { instance: instanceOf(obj), incarnation: incarnationOf(obj), nodes: identities(obj) } };
  throw new CoordinationMessageError(
    `protocol ${JSON.stringify(obj['protocol'])} is none of ${ASK_PROTOCOL}, ${GRANT_PROTOCOL}, ${BUSY_PROTOCOL}`,
  );
}

/** The identities of `nodes`: every one must pass the identity rule, or the message is refused. */
function identities(obj: Record<string, unknown>): NodeIdentity[] {
  const nodes = obj['nodes'];
  if (!Array.isArray(nodes)) throw new CoordinationMessageError('"nodes" must be an array of node identities');
  return nodes.map((n: unknown, i) => peerIdentity(n, `nodes[${i}]`));
}

function peerIdentity(value: unknown, where: string): NodeIdentity {
  if (typeof value !== 'string') throw new CoordinationMessageError(`${where} must be a node identity (a string)`);
  const why = whyNotIdentity(value);
  if (why !== undefined) throw new CoordinationMessageError(`${where} is not a node identity: ${why}`);
  return value as NodeIdentity;
}

function askOf(obj: Record<string, unknown>): AskNotice {
  return { instance: instanceOf(obj), incarnation: incarnationOf(obj), want: count(obj, 'want', 1) };
}

function grantOf(obj: Record<string, unknown>): GrantNotice {
  const nodes = obj['nodes'];
  if (!Array.isArray(nodes)) throw new CoordinationMessageError('"nodes" must be an array');
  const granted = nodes.map((node: unknown, i): GrantedNode => {
    if (!isPlainObject(node)) throw new CoordinationMessageError(`nodes[${i}] must be an object`);
    const identity = peerIdentity(node['identity'], `nodes[${i}].identity`);
    const version = node['version'];
    if (version !== undefined && typeof version !== 'string')
      throw new CoordinationMessageError(`nodes[${i}].version must be a string`);
    return version !== undefined && version !== '' ? { identity, reportedVersion: version } : { identity };
  });
  return { instance: instanceOf(obj), incarnation: incarnationOf(obj), nodes: granted };
}

export function parseDone(data: Uint8Array): DoneNotice {
  const obj = objectOf(data, DONE_PROTOCOL);
  const nodes = identities(obj);
  const incarnation = obj['incarnation'] === undefined ? undefined : incarnationOf(obj);
  return { instance: instanceOf(obj), ...(incarnation !== undefined ? { incarnation } : {}), nodes };
}

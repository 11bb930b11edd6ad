// A deliberately small, hand-written Choria client for the simulator tests, encoded from go-choria's wire format
// independently of the simulator's own wire code.
import { createHash, randomUUID } from 'node:crypto';
import type { NatsConnection } from 'nats';

export type Version = 'v1' | 'v2';

export const SENDER = 'provisioner.example.net';
export const CALLER = 'choria=provisioner.example.net';

export interface BuildOptions {
  version: Version;
  agent: string;
  /** the wire value of the request `message` field (overrides body) */
  messageField?: string;
  /** MCORPC body object, JSON-encoded into the message */
  body?: unknown;
  requestId?: string;
  senderId?: string;
  callerId?: string;
  collective?: string;
  ttl?: number;
  /** request time in Unix seconds (default now) */
  timeSec?: number;
  /** filter object (default: agent filter) or null to leave it out */
  filter?: Record<string, unknown> | null;
  /** reply subject, null for none */
  replyTo?: string | null;
}

export interface BuiltRequest {
  data: string;
  requestId: string;
  replyTo: string | undefined;
}

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');

export function buildRequest(o: BuildOptions): BuiltRequest {
  const requestId = o.requestId ?? randomUUID().replaceAll('-', '');
  const callerId = o.callerId ?? CALLER;
  const senderId = o.senderId ?? SENDER;
  const replyTo = o.replyTo === null ? undefined : (o.replyTo ?? `provisioning.reply.${md5(callerId)}.${requestId}`);
  const filter =
    o.filter === null
      ? undefined
      : (o.filter ?? { fact: [], cf_class: [], agent: [o.agent], identity: [], compound: [] });
  const bodyText = o.body === undefined ? '' : JSON.stringify(o.body);
  const timeSec = o.timeSec ?? Math.floor(Date.now() / 1000);
  if (o.version === 'v1') {
    const envelope: Record<string, unknown> = {
      requestid: requestId,
      senderid: senderId,
      callerid: callerId,
      collective: o.collective ?? 'provisioning',
      agent: o.agent,
      ttl: o.ttl ?? 60,
      time: timeSec,
    };
    if (filter !== undefined) envelope['filter'] = filter;
    const request = JSON.stringify({ protocol: 'choria:request:1', message: o.messageField ?? bodyText, envelope });
    const secure = JSON.stringify({
      protocol: 'choria:secure:request:1',
      message: request,
      signature: 'insecure',
      pubcert: 'insecure',
    });
    const headers: Record<string, unknown> = { mc_sender: senderId };
    if (replyTo !== undefined) headers['reply-to'] = replyTo;
    return { data: JSON.stringify({ protocol: 'choria:transport:1', data: b64(secure), headers }), requestId, replyTo };
  }
  const req: Record<string, unknown> = {
    protocol: 'io.choria.protocol.v2.request',
    message: o.messageField ?? b64(bodyText),
    id: requestId,
    sender: senderId,
    caller: callerId,
    collective: o.collective ?? 'provisioning',
    agent: o.agent,
    ttl: o.ttl ?? 60,
    time: `${timeSec}000000000`,
  };
  if (filter !== undefined) req['filter'] = filter;
  // time must be a JSON integer beyond 2^53: splice it in as text
  const request = JSON.stringify(req).replace(`"time":"${timeSec}000000000"`, `"time":${timeSec}000000000`);
  const secure = JSON.stringify({
    protocol: 'io.choria.protocol.v2.secure_request',
    request: b64(request),
    signature: b64('insecure'),
    caller: 'a.client.jwt',
  });
  const headers: Record<string, unknown> = { sender: senderId };
  if (replyTo !== undefined) headers['reply'] = replyTo;
  return {
    data: JSON.stringify({ protocol: 'io.choria.protocol.v2.transport', data: b64(secure), headers }),
    requestId,
    replyTo,
  };
}

export interface ReceivedReply {
  version: Version;
  transportSender: string;
  sender: string;
  requestId: string;
  agent: string;
  body: string;
  hashOk: boolean;
}

export function decodeReply(data: Uint8Array): ReceivedReply {
  const t = JSON.parse(Buffer.from(data).toString('utf8')) as {
    protocol: string;
    data: string;
    headers: Record<string, string>;
  };
  const secure = JSON.parse(Buffer.from(t.data, 'base64').toString('utf8')) as Record<string, string>;
  if (t.protocol === 'choria:transport:1') {
    const replyText = secure['message'] ?? '';
    const r = JSON.parse(replyText) as {
      message: string;
      envelope: { requestid: string; senderid: string; agent: string };
    };
    return {
      version: 'v1',
      transportSender: t.headers['mc_sender'] ?? '',
      sender: r.envelope.senderid,
      requestId: r.envelope.requestid,
      agent: r.envelope.agent,
      body: r.message,
      hashOk: createHash('sha256').update(replyText, 'utf8').digest('base64') === secure['hash'],
    };
  }
  const replyBytes = Buffer.from(secure['reply'] ?? '', 'base64');
  const r = JSON.parse(replyBytes.toString('utf8')) as {
    message: string;
    request: string;
    sender: string;
    agent: string;
  };
  return {
    version: 'v2',
    transportSender: t.headers['sender'] ?? '',
    sender: r.sender,
    requestId: r.request,
    agent: r.agent,
    body: Buffer.from(r.message, 'base64').toString('utf8'),
    hashOk: createHash('sha256').update(replyBytes).digest('base64') === secure['hash'],
  };
}

export interface RpcResult {
  action: string;
  statuscode: number;
  statusmsg: string;
  data: Record<string, unknown>;
}

export class MiniClient {
  constructor(readonly nc: NatsConnection) {}

  /** Publishes a built request and collects replies until `expect` arrived or the timeout. */
  async send(subject: string, req: BuiltRequest, timeoutMs: number, expect = 1): Promise<ReceivedReply[]> {
    const replies: ReceivedReply[] = [];
    if (req.replyTo === undefined) {
      this.nc.publish(subject, req.data);
      await this.nc.flush();
      await new Promise((r) => setTimeout(r, timeoutMs));
      return replies;
    }
    const sub = this.nc.subscribe(req.replyTo);
    this.nc.publish(subject, req.data);
    const timer = setTimeout(() => sub.unsubscribe(), timeoutMs);
    for await (const m of sub) {
      replies.push(decodeReply(m.data));
      if (replies.length >= expect) break;
    }
    clearTimeout(timer);
    sub.unsubscribe();
    return replies;
  }

  async rpc(
    identity: string,
    version: Version,
    agent: string,
    action: string,
    data: Record<string, unknown>,
    extra: Partial<BuildOptions> = {},
    timeoutMs = 3000,
  ): Promise<{ reply: RpcResult | undefined; raw: ReceivedReply | undefined; requestId: string }> {
    const req = buildRequest({ version, agent, body: { agent, action, data }, ...extra });
    const [raw] = await this.send(`provisioning.node.${identity}`, req, timeoutMs);
    return {
      reply: raw === undefined ? undefined : (JSON.parse(raw.body) as RpcResult),
      raw,
      requestId: req.requestId,
    };
  }

  /** Broadcast discovery; returns the sender identities of the replies. */
  async discover(
    version: Version,
    messageField: string,
    timeoutMs: number,
    expect = Number.MAX_SAFE_INTEGER,
  ): Promise<ReceivedReply[]> {
    const req = buildRequest({
      version,
      agent: 'discovery',
      messageField,
      filter: { fact: [], cf_class: [], agent: ['choria_provision'], identity: [], compound: [] },
    });
    return this.send('provisioning.broadcast.agent.discovery', req, timeoutMs, expect);
  }
}

/** v1 discovery payload field: base64("ping"); v2: base64(base64("ping")). */
export const DISCOVERY_FIELD: Readonly<Record<Version, string>> = { v1: 'cGluZw==', v2: 'Y0dsdVp3PT0=' };

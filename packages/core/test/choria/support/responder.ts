// A tiny stand-in for provisioning-mode servers, built only from the client's own codec functions:
// every identity subscribes to discovery and to its node subject, decodes requests and replies.
import { connect, type NatsConnection } from 'nats';
import { codecFor, DISCOVERY_REPLY_BODY, serverSidePayload } from '../../../src/choria/protocol/codec.js';
import { nowNanoseconds } from '../../../src/choria/protocol/ids.js';
import {
  encodeRpcReply,
  parseRpcRequest,
  type RpcReplyBody,
  type RpcRequestBody,
} from '../../../src/choria/protocol/mcorpc.js';
import type { DecodedRequest, ProtocolVersion } from '../../../src/choria/protocol/types.js';

export interface RpcContext {
  readonly identity: string;
  readonly request: RpcRequestBody;
  readonly decoded: DecodedRequest;
}

export interface ResponderOptions {
  readonly url: string;
  readonly identities: readonly string[];
  readonly connections?: number;
  readonly version?: ProtocolVersion;
  /** reply body for an RPC; undefined = do not reply (default: OK with `{}`) */
  readonly onRpc?: (ctx: RpcContext) => RpcReplyBody | undefined;
  /** per identity: other senders whose replies are published first (duplicate-reply tests) */
  readonly extraSenders?: Readonly<Record<string, readonly string[]>>;
}

export interface Responders {
  readonly connections: readonly NatsConnection[];
  /** every directed request that was decoded */
  readonly requests: DecodedRequest[];
  discoveryRequests: number;
  flush(): Promise<void>;
  close(): Promise<void>;
}

export async function startResponders(opts: ResponderOptions): Promise<Responders> {
  const codec = codecFor(opts.version ?? 'v1');
  const connections = await Promise.all(
    Array.from({ length: opts.connections ?? 1 }, (_, i) =>
      connect({
        servers: opts.url,
        name: `responder-${i}`,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 100,
        reconnectJitter: 50,
      }),
    ),
  );
  const state: Responders = {
    connections,
    requests: [],
    discoveryRequests: 0,
    flush: async () => {
      await Promise.all(connections.map((c) => c.flush()));
    },
    close: async () => {
      await Promise.all(connections.map((c) => c.close()));
    },
  };

  const reply = (nc: NatsConnection, decoded: DecodedRequest, sender: string, body: string): void => {
    if (decoded.headers.replyTo === undefined) return;
    const encoded = codec.encodeReply({
      requestId: decoded.id,
      sender,
      agent: decoded.agent,
      timeNs: nowNanoseconds(),
      body,
    });
    nc.publish(decoded.headers.replyTo, encoded.transportJson);
  };

  opts.identities.forEach((identity, i) => {
    const nc = connections[i % connections.length] as NatsConnection;
    const handle = (data: Uint8Array, directed: boolean): void => {
      const decoded = codec.decodeRequest(data);
      const payload = serverSidePayload(decoded.payload);
      if (decoded.agent === 'discovery') {
        state.discoveryRequests++;
        if (payload.includes('ping')) reply(nc, decoded, identity, DISCOVERY_REPLY_BODY);
        return;
      }
      if (!directed) return;
      state.requests.push(decoded);
      const request = parseRpcRequest(payload.toString('utf8'));
      const body = opts.onRpc
        ? opts.onRpc({ identity, request, decoded })
        : { action: request.action, statuscode: 0, statusmsg: 'OK', data: {} };
      if (body === undefined) return;
      for (const other of opts.extraSenders?.[identity] ?? []) reply(nc, decoded, other, encodeRpcReply(body));
      reply(nc, decoded, identity, encodeRpcReply(body));
    };
    nc.subscribe('provisioning.broadcast.agent.discovery', {
      callback: (err, msg) => err === null && handle(msg.data, false),
    });
    nc.subscribe(`provisioning.node.${identity}`, { callback: (err, msg) => err === null && handle(msg.data, true) });
  });
  await state.flush();
  return state;
}

// The layering both protocol versions share: a Request or Reply document, wrapped
// in a secure document (signature or hash), wrapped in a transport whose `data` is base64 and whose
// headers route the message. A version supplies its document builders and readers; this module
// stacks them the same way for both.
import { ProtocolError } from '../errors.js';
import { bytesToText, fromBase64, isJsonObject, readDocument, requireString, toBase64 } from './encoding.js';
import type {
  DecodedReply,
  DecodedRequest,
  DecodedTransport,
  EncodedReply,
  EncodedRequest,
  OutgoingReply,
  OutgoingRequest,
  ProtocolCodec,
  ProtocolVersion,
  ReplyDocument,
  RequestDocument,
  RequestSigning,
  TraceHop,
  TransportHeaders,
} from './types.js';

/** What one protocol version names and embeds differently. */
export interface EnvelopeLayers {
  readonly version: ProtocolVersion;
  readonly transportProtocol: string;
  /** transport header keys; `trace` lists the keys read for the trace, the first is the one written */
  readonly headerKeys: {
    readonly replyTo: string;
    readonly sender: string;
    readonly trace: readonly [string, ...string[]];
  };
  buildRequest(request: OutgoingRequest): string;
  buildSecureRequest(requestJson: string, signature: string, credential: string): string;
  buildReply(reply: OutgoingReply): string;
  buildSecureReply(replyJson: string): { readonly json: string; readonly hash: string };
  readSecureRequest(text: string): {
    readonly requestJson: string;
    readonly signature: string;
    readonly credential: string;
  };
  readRequest(requestJson: string): RequestDocument;
  /** verifies the hash and returns the embedded Reply JSON text */
  readSecureReply(text: string): string;
  readReply(replyJson: string): ReplyDocument;
}

/** Unix nanoseconds to the whole seconds v1 documents carry. */
export function secondsOf(timeNs: bigint): number {
  return Number(timeNs / 1_000_000_000n);
}

function parseTraceHops(value: unknown): TraceHop[] | undefined {
  if (!Array.isArray(value)) return undefined;
  // informational only: malformed hops are dropped rather than failing the message
  return value.filter(
    (hop): hop is TraceHop => Array.isArray(hop) && hop.length === 3 && hop.every((p) => typeof p === 'string'),
  );
}

/** `secureJson` is the secure request or secure reply text; it travels base64-encoded. */
export function transportJson(layers: EnvelopeLayers, secureJson: string, headers: TransportHeaders): string {
  const keys = layers.headerKeys;
  const wire: Record<string, unknown> = {};
  if (headers.replyTo !== undefined && headers.replyTo !== '') wire[keys.replyTo] = headers.replyTo;
  if (headers.sender !== undefined && headers.sender !== '') wire[keys.sender] = headers.sender;
  if (headers.trace !== undefined && headers.trace.length > 0) wire[keys.trace[0]] = headers.trace;
  // the protocol name is a constant and base64 needs no escaping: only the headers go through JSON.stringify
  return (
    `{"protocol":${JSON.stringify(layers.transportProtocol)},"data":"${toBase64(secureJson)}",` +
    `"headers":${JSON.stringify(wire)}}`
  );
}

export function parseTransport(layers: EnvelopeLayers, input: Uint8Array | string): DecodedTransport {
  const what = `${layers.version} transport`;
  const obj = readDocument(typeof input === 'string' ? input : bytesToText(input), what, [layers.transportProtocol]);
  const data = fromBase64(requireString(obj, 'data', what), `${what} data`);
  const raw = obj['headers'];
  const wire = isJsonObject(raw) ? raw : {};
  const replyTo = wire[layers.headerKeys.replyTo];
  const sender = wire[layers.headerKeys.sender];
  const traceKey = layers.headerKeys.trace.find((key) => wire[key] !== undefined && wire[key] !== null);
  const trace = traceKey === undefined ? undefined : parseTraceHops(wire[traceKey]);
  return {
    version: layers.version,
    data,
    headers: {
      ...(typeof replyTo === 'string' && replyTo !== '' ? { replyTo } : {}),
      ...(typeof sender === 'string' && sender !== '' ? { sender } : {}),
      ...(trace !== undefined ? { trace } : {}),
    },
  };
}

/** The codec of one version, from its layers. */
export function envelopeCodec(layers: EnvelopeLayers): ProtocolCodec {
  const { version } = layers;
  const asTransport = (input: Uint8Array | string | DecodedTransport): DecodedTransport => {
    if (typeof input === 'string' || input instanceof Uint8Array) return parseTransport(layers, input);
    if (input.version !== version) throw new ProtocolError(`expected a ${version} transport, got ${input.version}`);
    return input;
  };
  const traceOf = (m: { readonly trace?: readonly TraceHop[] }) => (m.trace !== undefined ? { trace: m.trace } : {});

  return {
    version,

    encodeRequest(req: OutgoingRequest, signer: RequestSigning): EncodedRequest {
      if (signer.protocol !== version)
        throw new ProtocolError(`a ${signer.protocol} signer cannot sign ${version} requests`);
      const requestJson = layers.buildRequest(req);
      const signature = signer.sign(Buffer.from(requestJson, 'utf8'));
      const secureRequestJson = layers.buildSecureRequest(requestJson, signature, signer.credential);
      const transport = transportJson(layers, secureRequestJson, {
        replyTo: req.replyTo,
        sender: req.sender,
        ...traceOf(req),
      });
      return { requestJson, secureRequestJson, transportJson: transport, signature };
    },

    decodeTransport: (input) => parseTransport(layers, input),

    decodeRequest(input): DecodedRequest {
      const transport = asTransport(input);
      const secure = layers.readSecureRequest(transport.data.toString('utf8'));
      return {
        ...layers.readRequest(secure.requestJson),
        version,
        signature: secure.signature,
        credential: secure.credential,
        requestJson: secure.requestJson,
        headers: transport.headers,
      };
    },

    encodeReply(reply: OutgoingReply): EncodedReply {
      const replyJson = layers.buildReply(reply);
      const secure = layers.buildSecureReply(replyJson);
      const transport = transportJson(layers, secure.json, { sender: reply.sender, ...traceOf(reply) });
      return { replyJson, secureReplyJson: secure.json, transportJson: transport, hash: secure.hash };
    },

    decodeReply(input): DecodedReply {
      const transport = asTransport(input);
      const replyJson = layers.readSecureReply(transport.data.toString('utf8'));
      return { ...layers.readReply(replyJson), version, headers: transport.headers, replyJson };
    },
  };
}

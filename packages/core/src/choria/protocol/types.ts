// Shapes shared by the v1 and v2 envelope codecs.
import type { Filter } from './filter.js';

export type ProtocolVersion = 'v1' | 'v2';

/** A hop of the `seen-by` (v1) / `trace` (v2) header: [incoming broker, processor, outgoing broker]. */
export type TraceHop = readonly [string, string, string];

/** Transport headers in version-neutral names (v1 `reply-to`/`mc_sender`/`seen-by`, v2 `reply`/`sender`/`trace`). */
export interface TransportHeaders {
  readonly replyTo?: string;
  readonly sender?: string;
  readonly trace?: readonly TraceHop[];
}

export interface DecodedTransport {
  readonly version: ProtocolVersion;
  /** the embedded secure request or secure reply JSON bytes */
  readonly data: Buffer;
  readonly headers: TransportHeaders;
}

/** What a request signer contributes to the secure request. */
export interface RequestSigning {
  readonly protocol: ProtocolVersion;
  /** v1 `pubcert` (certificate text or `insecure`), v2 `caller` (the client JWT) */
  readonly credential: string;
  /** the `signature` field value for the exact Request JSON bytes */
  sign(requestJson: Uint8Array): string;
}

/** Who a request is from and for: what the Request documents of both versions carry. */
export interface RequestAddressing {
  /** v1: exactly 32 characters; v2: non-empty, subject-safe */
  readonly id: string;
  readonly sender: string;
  readonly callerId: string;
  readonly collective: string;
  readonly agent: string;
  /** seconds; v1 requires >= 30 */
  readonly ttl: number;
  readonly filter: Filter;
}

export interface OutgoingRequest extends RequestAddressing {
  /** creation time, Unix nanoseconds (v1 sends whole seconds) */
  readonly timeNs: bigint;
  /** agent payload text before the version's embedding: MCORPC JSON, or `cGluZw==` for discovery */
  readonly payload: string;
  readonly replyTo: string;
  readonly trace?: readonly TraceHop[];
}

export interface EncodedRequest {
  readonly requestJson: string;
  readonly secureRequestJson: string;
  readonly transportJson: string;
  readonly signature: string;
}

/** A Request document as read from the wire. */
export interface RequestDocument extends RequestAddressing {
  /** v1: Unix seconds; v2: Unix nanoseconds (a Number, so below 1 µs precision is lost) */
  readonly time: number;
  /**
   * payload bytes as carried (v1: the message string, v2: the
   * base64-decoded message), before a server's extra base64 attempt
   */
  readonly payload: Buffer;
}

export interface DecodedRequest extends RequestDocument {
  readonly version: ProtocolVersion;
  readonly signature: string;
  /** v1 `pubcert`, v2 `caller` */
  readonly credential: string;
  /** the exact Request JSON text that was signed */
  readonly requestJson: string;
  readonly headers: TransportHeaders;
}

/** Which request a reply answers and who sends it. */
export interface ReplyAddressing {
  readonly requestId: string;
  /** the reply envelope sender (covered by the verified hash) */
  readonly sender: string;
  readonly agent: string;
}

export interface OutgoingReply extends ReplyAddressing {
  readonly timeNs: bigint;
  /** the agent reply body: MCORPC reply JSON, or `pong` */
  readonly body: string;
  readonly trace?: readonly TraceHop[];
}

export interface EncodedReply {
  readonly replyJson: string;
  readonly secureReplyJson: string;
  readonly transportJson: string;
  readonly hash: string;
}

/** A Reply document as read from the wire. */
export interface ReplyDocument extends ReplyAddressing {
  /** v1: Unix seconds; v2: Unix nanoseconds (approximate Number) */
  readonly time: number;
  readonly body: string;
}

export interface DecodedReply extends ReplyDocument {
  readonly version: ProtocolVersion;
  readonly headers: TransportHeaders;
  readonly replyJson: string;
}

/** Builds and parses all envelope layers of one protocol version. */
export interface ProtocolCodec {
  readonly version: ProtocolVersion;
  encodeRequest(request: OutgoingRequest, signer: RequestSigning): EncodedRequest;
  decodeTransport(bytes: Uint8Array | string): DecodedTransport;
  decodeRequest(input: Uint8Array | string | DecodedTransport): DecodedRequest;
  encodeReply(reply: OutgoingReply): EncodedReply;
  /** verifies the secure reply hash; throws ProtocolError on any problem */
  decodeReply(input: Uint8Array | string | DecodedTransport): DecodedReply;
}

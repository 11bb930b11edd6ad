// Typed values produced by the server-side decoders.

export type ProtocolVersion = 'v1' | 'v2';

export interface FactFilter {
  fact: string;
  operator: string;
  value: string;
}

export interface RequestFilter {
  fact: FactFilter[];
  cf_class: string[];
  agent: string[];
  identity: string[];
  compound: unknown[][];
}

/** A request as a go-choria server sees it after the transport, secure request and request layers. */
export interface DecodedRequest {
  version: ProtocolVersion;
  /** reply subject from the transport header (`reply-to` in v1, `reply` in v2) */
  replyTo: string | undefined;
  /** sender header of the transport (`mc_sender` / `sender`) */
  transportSender: string | undefined;
  requestId: string;
  senderId: string;
  callerId: string;
  collective: string;
  agent: string;
  /** seconds */
  ttl: number;
  /** request creation time, Unix milliseconds (v2 nanoseconds are converted) */
  timeMs: number;
  /** absent only in v2, where the schema makes it optional */
  filter: RequestFilter | undefined;
  /** agent payload after the server's base64 tolerance rule */
  payload: Buffer;
}

export type DecodeFailure = {
  ok: false;
  detail: string;
  /** known when the transport could be decoded */
  version?: ProtocolVersion;
  requestId?: string;
};

export type DecodeResult = { ok: true; request: DecodedRequest } | DecodeFailure;

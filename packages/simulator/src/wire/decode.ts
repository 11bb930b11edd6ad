// Server-side decoding of an incoming request: Transport -> Secure Request -> Request -> payload,
// following go-choria's order of checks (envelope, signature, inner request, payload rule). Collective, TTL and filter
// checks are separate functions because a broadcast is decoded once and checked per node.
import { goStdBase64Decode } from './base64.js';
import type { DecodeResult, DecodedRequest, ProtocolVersion, RequestFilter } from './types.js';
import { describeSchemaErrors, type ProtocolValidators } from './validate.js';

export const PROTOCOL = {
  v1: {
    transport: 'choria:transport:1',
    secureRequest: 'choria:secure:request:1',
    request: 'choria:request:1',
    secureReply: 'choria:secure:reply:1',
    reply: 'choria:reply:1',
  },
  v2: {
    transport: 'io.choria.protocol.v2.transport',
    secureRequest: 'io.choria.protocol.v2.secure_request',
    request: 'io.choria.protocol.v2.request',
    secureReply: 'io.choria.protocol.v2.secure_reply',
    reply: 'io.choria.protocol.v2.reply',
  },
} as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function optionalHeader(headers: Record<string, unknown>, name: string): string | undefined | null {
  const v = headers[name];
  if (v === undefined || v === null) return undefined;
  return typeof v === 'string' ? v : null; // null: wrong type, Go's decoder would fail
}

/**
 * The payload rule: the server tries to base64-decode the payload and, when that works, uses the
 * decoded bytes instead; decoding errors are ignored.
 */
export function applyPayloadBase64Tolerance(payload: Buffer): Buffer {
  const decoded = goStdBase64Decode(payload.toString('utf8'));
  return decoded ?? payload;
}

function readFilter(raw: unknown): RequestFilter | undefined {
  if (!isRecord(raw)) return undefined;
  const arr = (k: string): unknown[] => {
    const v = raw[k];
    return Array.isArray(v) ? (v as unknown[]) : [];
  };
  return {
    fact: arr('fact') as RequestFilter['fact'],
    cf_class: arr('cf_class').filter((x): x is string => typeof x === 'string'),
    agent: arr('agent').filter((x): x is string => typeof x === 'string'),
    identity: arr('identity').filter((x): x is string => typeof x === 'string'),
    compound: arr('compound').filter((x): x is unknown[] => Array.isArray(x)),
  };
}

/** Decodes a NATS message payload the way a provisioning-mode go-choria server does. */
export function decodeRequest(data: Uint8Array, validators: ProtocolValidators): DecodeResult {
  const transport = parseJson(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8'));
  if (!isRecord(transport)) return { ok: false, detail: 'transport: not a JSON object' };
  let version: ProtocolVersion;
  if (transport['protocol'] === PROTOCOL.v1.transport) version = 'v1';
  else if (transport['protocol'] === PROTOCOL.v2.transport) version = 'v2';
  else {
    return {
      ok: false,
      detail:
        `transport: do not know how to create a TransportMessage from protocol ` +
        `${JSON.stringify(transport['protocol'] ?? null)}`,
    };
  }
  const fail = (detail: string, requestId?: string): DecodeResult =>
    requestId === undefined ? { ok: false, detail, version } : { ok: false, detail, version, requestId };

  const headers = transport['headers'] ?? {};
  if (!isRecord(headers)) return fail('transport: headers is not an object');
  const replyTo = optionalHeader(headers, version === 'v1' ? 'reply-to' : 'reply');
  const sender = optionalHeader(headers, version === 'v1' ? 'mc_sender' : 'sender');
  if (replyTo === null || sender === null) return fail('transport: a header has the wrong type');
  if (typeof transport['data'] !== 'string') return fail('transport: data is not a string');
  const secureBytes = goStdBase64Decode(transport['data']);
  if (secureBytes === undefined) return fail('transport: data is not standard base64');

  const secure = parseJson(secureBytes.toString('utf8'));
  if (secure === undefined) return fail('secure request: not JSON');
  const secureValid = version === 'v1' ? validators.v1SecureRequest : validators.v2SecureRequest;
  if (!secureValid(secure)) return fail(`secure request: ${describeSchemaErrors(secureValid.errors)}`);
  const secureDoc = secure as Record<string, unknown>;

  let requestText: string;
  if (version === 'v1') {
    requestText = secureDoc['message'] as string;
  } else {
    const b = goStdBase64Decode(secureDoc['request'] as string);
    if (b === undefined) return fail('secure request: request is not standard base64');
    requestText = b.toString('utf8');
  }
  const request = parseJson(requestText);
  if (request === undefined) return fail('request: not JSON');
  const requestValid = version === 'v1' ? validators.v1Request : validators.v2Request;
  const idForErrors = (() => {
    if (!isRecord(request)) return undefined;
    const id =
      version === 'v1' ? (isRecord(request['envelope']) ? request['envelope']['requestid'] : undefined) : request['id'];
    return typeof id === 'string' ? id : undefined;
  })();
  if (!requestValid(request)) return fail(`request: ${describeSchemaErrors(requestValid.errors)}`, idForErrors);
  const r = request as Record<string, unknown>;

  let decoded: DecodedRequest;
  if (version === 'v1') {
    const env = r['envelope'] as Record<string, unknown>;
    decoded = {
      version,
      replyTo,
      transportSender: sender,
      requestId: env['requestid'] as string,
      senderId: env['senderid'] as string,
      callerId: env['callerid'] as string,
      collective: env['collective'] as string,
      agent: env['agent'] as string,
      ttl: env['ttl'] as number,
      timeMs: (env['time'] as number) * 1000,
      filter: readFilter(env['filter']),
      payload: applyPayloadBase64Tolerance(Buffer.from(r['message'] as string, 'utf8')),
    };
  } else {
    const message = goStdBase64Decode(r['message'] as string);
    if (message === undefined) return fail('request: message is not standard base64', idForErrors);
    decoded = {
      version,
      replyTo,
      transportSender: sender,
      requestId: r['id'] as string,
      senderId: r['sender'] as string,
      callerId: r['caller'] as string,
      collective: r['collective'] as string,
      agent: r['agent'] as string,
      ttl: r['ttl'] as number,
      timeMs: (r['time'] as number) / 1e6,
      filter: readFilter(r['filter']),
      payload: applyPayloadBase64Tolerance(message),
    };
  }
  return { ok: true, request: decoded };
}

/** the request collective must be one of the server's collectives. */
export function collectiveAccepted(req: DecodedRequest, collectives: readonly string[]): boolean {
  return collectives.includes(req.collective);
}

/** accept only if now - ttl < time < now + ttl (strict on both sides). */
export function ttlAccepted(req: DecodedRequest, nowMs: number): boolean {
  const ttlMs = req.ttl * 1000;
  return nowMs - ttlMs < req.timeMs && req.timeMs < nowMs + ttlMs;
}

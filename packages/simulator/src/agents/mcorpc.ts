// The MCORPC request/reply bodies as a go-choria server handles them.
import { goJsonStringify, goKindName, parseGoJson, type JValue } from '../wire/gojson.js';

export const StatusCode = {
  OK: 0,
  Aborted: 1,
  UnknownAction: 2,
  MissingData: 3,
  InvalidData: 4,
  UnknownError: 5,
} as const;

export interface RpcReply {
  action: string;
  statuscode: number;
  statusmsg: string;
  data: unknown;
}

export interface RpcRequestBody {
  agent: string;
  action: string;
  /** the `data` value, or undefined when absent (Go then uses `{}`) */
  data: JValue | undefined;
}

export function okReply(action: string, data: unknown): RpcReply {
  return { action, statuscode: StatusCode.OK, statusmsg: 'OK', data };
}

export function errorReply(action: string, statuscode: number, statusmsg: string, data: unknown = {}): RpcReply {
  return { action, statuscode, statusmsg, data };
}

export function encodeRpcReply(r: RpcReply): string {
  return goJsonStringify({ action: r.action, statuscode: r.statuscode, statusmsg: r.statusmsg, data: r.data });
}

/**
 * Parses the agent payload into the MCORPC request structure; on failure returns the error text
 * Go reports after `Could not process request: `.
 */
export function parseRpcRequest(payload: Buffer): { ok: true; body: RpcRequestBody } | { ok: false; error: string } {
  let v: JValue;
  try {
    v = parseGoJson(payload.toString('utf8'));
  } catch (e) {
    return {
      ok: false,
      error:
        `could not parse incoming message as a MCollective SimpleRPC Request: ` +
        `${e instanceof Error ? e.message : String(e)}`,
    };
  }
  const fail = (what: string, field: string, type: string): { ok: false; error: string } => ({
    ok: false,
    error:
      `could not parse incoming message as a MCollective SimpleRPC Request: json: ` +
      `cannot unmarshal ${what} into Go struct field Request.${field} of type ${type}`,
  });
  if (v.t === 'null') return { ok: true, body: { agent: '', action: '', data: undefined } };
  if (v.t !== 'obj') {
    return {
      ok: false,
      error:
        `could not parse incoming message as a MCollective SimpleRPC Request: json: ` +
        `cannot unmarshal ${goKindName(v)} into Go value of type mcorpc.Request`,
    };
  }
  const body: RpcRequestBody = { agent: '', action: '', data: undefined };
  for (const [key, value] of v.v) {
    const k = key.toLowerCase();
    if (k === 'agent' || k === 'action') {
      if (value.t === 'null') continue;
      if (value.t !== 'str') return fail(goKindName(value), k, 'string');
      body[k] = value.v;
    } else if (k === 'data') {
      body.data = value;
    }
  }
  return { ok: true, body };
}

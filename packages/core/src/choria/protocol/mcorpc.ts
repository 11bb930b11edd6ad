// The MCORPC layer: request bodies, reply bodies and status codes.
import {
  ProtocolError,
  ProvisioningLockError,
  RpcAbortedError,
  RpcInvalidDataError,
  RpcMissingDataError,
  RpcUnknownActionError,
  RpcUnknownError,
  type RpcStatusDetails,
  type RpcStatusError,
} from '../errors.js';
import { isJsonObject, parseJsonObject } from './encoding.js';

export const RpcStatus = {
  OK: 0,
  Aborted: 1,
  UnknownAction: 2,
  MissingData: 3,
  InvalidData: 4,
  UnknownError: 5,
} as const;

/** The exact text go-choria's provisioning agent uses when another sender holds the lock. */
export const PROVISIONING_LOCK_MESSAGE = 'Could not obtain provisioning lock';

export interface RpcRequestBody {
  readonly agent: string;
  readonly action: string;
  readonly data: Record<string, unknown>;
}

export interface RpcReplyBody {
  readonly action: string;
  readonly statuscode: number;
  readonly statusmsg: string;
  readonly data: unknown;
}

export function encodeRpcRequest(agent: string, action: string, data: Record<string, unknown>): string {
  return JSON.stringify({ agent, action, data });
}

/** Parses a request body as a server would see it (after its payload decoding). */
export function parseRpcRequest(text: string): RpcRequestBody {
  const obj = parseJsonObject(text, 'RPC request');
  const { agent, action, data } = obj;
  if (typeof agent !== 'string' || typeof action !== 'string')
    throw new ProtocolError('RPC request: "agent" and "action" must be strings');
  if (data !== undefined && data !== null && !isJsonObject(data))
    throw new ProtocolError('RPC request: "data" must be an object');
  return { agent, action, data: isJsonObject(data) ? data : {} };
}

export function encodeRpcReply(reply: RpcReplyBody): string {
  return JSON.stringify({
    action: reply.action,
    statuscode: reply.statuscode,
    statusmsg: reply.statusmsg,
    data: reply.data,
  });
}

/** Validates a reply body at the edge; an absent or null `data` becomes `{}`. */
export function parseRpcReply(text: string): RpcReplyBody {
  const obj = parseJsonObject(text, 'RPC reply');
  const { action, statuscode, statusmsg, data } = obj;
  if (typeof action !== 'string') throw new ProtocolError('RPC reply: "action" must be a string');
  if (typeof statuscode !== 'number' || !Number.isInteger(statuscode))
    throw new ProtocolError('RPC reply: "statuscode" must be an integer');
  if (typeof statusmsg !== 'string') throw new ProtocolError('RPC reply: "statusmsg" must be a string');
  return { action, statuscode, statusmsg, data: data ?? {} };
}

/** Maps a non-zero status code to its typed error (any unknown code becomes RpcUnknownError). */
export function rpcStatusError(details: RpcStatusDetails): RpcStatusError {
  switch (details.statuscode) {
    case RpcStatus.Aborted:
      return details.statusmsg === PROVISIONING_LOCK_MESSAGE
        ? new ProvisioningLockError(details)
        : new RpcAbortedError(details);
    case RpcStatus.UnknownAction:
      return new RpcUnknownActionError(details);
    case RpcStatus.MissingData:
      return new RpcMissingDataError(details);
    case RpcStatus.InvalidData:
      return new RpcInvalidDataError(details);
    default:
      return new RpcUnknownError(details);
  }
}

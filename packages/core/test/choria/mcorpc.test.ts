import { describe, expect, it } from 'vitest';
import {
  ProtocolError,
  ProvisioningLockError,
  RpcAbortedError,
  RpcInvalidDataError,
  RpcMissingDataError,
  RpcStatusError,
  RpcUnknownActionError,
  RpcUnknownError,
} from '../../src/choria/errors.js';
import { DISCOVERY_PAYLOAD, serverSidePayload } from '../../src/choria/protocol/codec.js';
import { encodeRpcRequest, parseRpcReply, parseRpcRequest, rpcStatusError } from '../../src/choria/protocol/mcorpc.js';

const details = (statuscode: number, statusmsg: string) => ({
  sender: 'node1',
  action: 'jwt',
  statuscode,
  statusmsg,
  data: {},
  requestId: 'r1',
});

describe('MCORPC status codes', () => {
  it.each([
    [1, 'Incorrect provision token supplied', RpcAbortedError],
    [2, 'Unknown action foo for agent choria_provision', RpcUnknownActionError],
    [3, 'missing', RpcMissingDataError],
    [4, 'Could not parse request data for choria_provision#restart: bad', RpcInvalidDataError],
    [5, 'boom', RpcUnknownError],
    [9, 'from the future', RpcUnknownError],
  ])('code %i maps to its error class with the upstream message', (code, msg, cls) => {
    const err = rpcStatusError(details(code, msg));
    expect(err).toBeInstanceOf(cls);
    expect(err).toBeInstanceOf(RpcStatusError);
    expect(err.message).toBe(`invalid response from node1: ${msg} (${code})`);
    expect(err.reply.statuscode).toBe(code);
  });

  it('recognises the provisioning lock as a special abort', () => {
    const err = rpcStatusError(details(1, 'Could not obtain provisioning lock'));
    expect(err).toBeInstanceOf(ProvisioningLockError);
    expect(err).toBeInstanceOf(RpcAbortedError);
    expect(rpcStatusError(details(1, 'Could not obtain provisioning lock!'))).not.toBeInstanceOf(ProvisioningLockError);
  });

  it('keeps reply data on status errors (gen25519 can abort with data)', () => {
    const err = rpcStatusError({ ...details(1, 'Could not remove existing jwt file'), data: { public_key: 'ab' } });
    expect(err.reply.data).toEqual({ public_key: 'ab' });
  });
});

describe('MCORPC bodies', () => {
  it('encodes requests as {agent, action, data}', () => {
    expect(encodeRpcRequest('rpcutil', 'inventory', {})).toBe('{"agent":"rpcutil","action":"inventory","data":{}}');
    expect(parseRpcRequest('{"agent":"a","action":"b"}')).toEqual({ agent: 'a', action: 'b', data: {} });
  });

  it('validates replies at the edge', () => {
    expect(parseRpcReply('{"action":"jwt","statuscode":0,"statusmsg":"OK"}')).toEqual({
      action: 'jwt',
      statuscode: 0,
      statusmsg: 'OK',
      data: {},
    });
    expect(() => parseRpcReply('pong')).toThrow(ProtocolError);
    expect(() => parseRpcReply('{"action":"jwt","statuscode":"0","statusmsg":"OK"}')).toThrow(/statuscode/);
    expect(() => parseRpcReply('{"action":"jwt","statuscode":0.5,"statusmsg":"OK"}')).toThrow(/integer/);
    expect(() => parseRpcReply('{"statuscode":0,"statusmsg":"OK"}')).toThrow(/action/);
    expect(() => parseRpcReply('[]')).toThrow(/not a JSON object/);
  });
});

describe("a server's payload base64 tolerance", () => {
  it('turns cGluZw== into ping, but raw ping into garbage', () => {
    expect(serverSidePayload(Buffer.from(DISCOVERY_PAYLOAD)).toString()).toBe('ping');
    expect([...serverSidePayload(Buffer.from('ping'))]).toEqual([0xa6, 0x29, 0xe0]);
  });

  it('keeps JSON (not base64) as it is', () => {
    const json = '{"agent":"rpcutil","action":"inventory","data":{}}';
    expect(serverSidePayload(Buffer.from(json)).toString()).toBe(json);
  });
});

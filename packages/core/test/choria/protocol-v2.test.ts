import { createPublicKey, verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readVector, readVectorJson } from '@choria-provisioner/test-support/vectors';
import { DISCOVERY_PAYLOAD, serverSidePayload } from '../../src/choria/protocol/codec.js';
import { agentFilter } from '../../src/choria/protocol/filter.js';
import { newKsuid, newV1RequestId } from '../../src/choria/protocol/ids.js';
import { parseRpcReply } from '../../src/choria/protocol/mcorpc.js';
import { transportJson } from '../../src/choria/protocol/envelope-codec.js';
import { v2Codec, v2Layers, V2_DISCOVERY_MESSAGE } from '../../src/choria/protocol/v2.js';
import { ChoriaSigner } from '../../src/choria/security/choria.js';
import { ed25519KeyFromSeed, ed25519PublicHex } from '../../src/util/ed25519.js';
import { InsecureSigner } from '../../src/choria/security/insecure.js';
import { assertValid } from './support/schemas.js';

interface V2Vector {
  signer_public_key_hex: string;
  reply_subject: string;
  request: {
    payload: string;
    request_json: string;
    signature_base64: string;
    secure_request_json: string;
    transport_json: string;
  };
  reply: {
    payload: string;
    reply_json: string;
    secure_reply_json: string;
    secure_reply_hash: string;
    transport_json: string;
  };
}

const BROKER = 'nats://broker.example.net:4222';
const CALLER_PLACEHOLDER = '<the provisioner client JWT (contents of plugin.security.choria.token_file)>';

function vectorSigner(): ChoriaSigner {
  const key = ed25519KeyFromSeed(Buffer.from(readVector('protocol', 'derived', 'keys', 'ed25519-signer.seed'), 'hex'));
  return new ChoriaSigner({
    token: CALLER_PLACEHOLDER,
    callerId: 'provisioner_signer',
    privateKey: key,
    publicKeyHex: ed25519PublicHex(key),
  });
}

describe('protocol v2 known answers', () => {
  const v = readVectorJson<V2Vector>('protocol', 'derived', 'v2-gen25519-signed.json');

  it('reproduces the gen25519 request and its ed25519 signature', () => {
    const signer = vectorSigner();
    expect(signer.publicKeyHex).toBe(v.signer_public_key_hex);
    const encoded = v2Codec.encodeRequest(
      {
        id: '2Yc1Q8u6mGd9pWcY0Wl0bM3xkZr',
        sender: 'provisioner.example.net',
        callerId: signer.callerId,
        collective: 'provisioning',
        agent: 'choria_provision',
        ttl: 60,
        timeNs: 1700000000123456789n,
        filter: agentFilter('choria_provision'),
        payload: v.request.payload,
        replyTo: v.reply_subject,
        trace: [[BROKER, 'provisioner.example.net', BROKER]],
      },
      signer,
    );
    expect(encoded.requestJson).toBe(v.request.request_json);
    // the nanosecond time is exact, not rounded through a double
    expect(encoded.requestJson).toContain('"time":1700000000123456789,');
    expect(encoded.signature).toBe(v.request.signature_base64);
    expect(encoded.secureRequestJson).toBe(v.request.secure_request_json);
    expect(encoded.transportJson).toBe(v.request.transport_json);
    const pub = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(v.signer_public_key_hex, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    expect(verify(null, Buffer.from(encoded.requestJson), pub, Buffer.from(encoded.signature, 'base64'))).toBe(true);
  });

  it('reproduces the reply layers and decodes them', () => {
    const encoded = v2Codec.encodeReply({
      requestId: '2Yc1Q8u6mGd9pWcY0Wl0bM3xkZr',
      sender: 'node1.example.net',
      agent: 'choria_provision',
      timeNs: 1700000000223456789n,
      body: v.reply.payload,
      trace: [[BROKER, 'node1.example.net', BROKER]],
    });
    expect(encoded.replyJson).toBe(v.reply.reply_json);
    expect(encoded.secureReplyJson).toBe(v.reply.secure_reply_json);
    expect(encoded.hash).toBe(v.reply.secure_reply_hash);
    expect(encoded.transportJson).toBe(v.reply.transport_json);

    const decoded = v2Codec.decodeReply(v.reply.transport_json);
    expect(decoded).toMatchObject({
      version: 'v2',
      requestId: '2Yc1Q8u6mGd9pWcY0Wl0bM3xkZr',
      sender: 'node1.example.net',
      agent: 'choria_provision',
      body: v.reply.payload,
    });
    expect(parseRpcReply(decoded.body).action).toBe('gen25519');
  });

  it('decodes the request as a server would', () => {
    const req = v2Codec.decodeRequest(v.request.transport_json);
    expect(req).toMatchObject({
      id: '2Yc1Q8u6mGd9pWcY0Wl0bM3xkZr',
      callerId: 'provisioner_signer',
      credential: CALLER_PLACEHOLDER,
      agent: 'choria_provision',
      ttl: 60,
    });
    expect(req.payload.toString()).toBe(v.request.payload);
    expect(req.requestJson).toBe(v.request.request_json);
    expect(req.headers.replyTo).toBe(v.reply_subject);
  });
});

describe('protocol v2 encoding rules', () => {
  it('double-encodes the discovery payload to Y0dsdVp3PT0=, which a server turns back into ping', () => {
    const encoded = v2Codec.encodeRequest(
      {
        id: newKsuid(),
        sender: 's',
        callerId: 'c',
        collective: 'provisioning',
        agent: 'discovery',
        ttl: 60,
        timeNs: 1n,
        filter: agentFilter('choria_provision'),
        payload: DISCOVERY_PAYLOAD,
        replyTo: 'r',
      },
      new InsecureSigner('v2', 'c'),
    );
    const request = JSON.parse(encoded.requestJson) as { message: string };
    expect(request.message).toBe(V2_DISCOVERY_MESSAGE);
    expect(serverSidePayload(v2Codec.decodeRequest(encoded.transportJson).payload).toString()).toBe('ping');
  });

  it('uses base64("insecure") and a non-empty caller when insecure', () => {
    const encoded = v2Codec.encodeRequest(
      {
        id: 'abc',
        sender: 's',
        callerId: 'choria=s',
        collective: 'provisioning',
        agent: 'rpcutil',
        ttl: 60,
        timeNs: 5n,
        filter: agentFilter('rpcutil'),
        payload: '{}',
        replyTo: 'r',
      },
      new InsecureSigner('v2', 'choria=s'),
    );
    const secure = JSON.parse(encoded.secureRequestJson) as Record<string, string>;
    expect(secure['signature']).toBe('aW5zZWN1cmU=');
    expect(secure['caller']).toBe('choria=s');
    assertValid('v2', 'secure_request', encoded.secureRequestJson);
  });

  it('emits layers that validate against the go-choria schemas (reply protocol constant patched)', () => {
    const signer = vectorSigner();
    const encoded = v2Codec.encodeRequest(
      {
        id: newKsuid(),
        sender: 'provisioner.example.net',
        callerId: signer.callerId,
        collective: 'provisioning',
        agent: 'choria_provision',
        ttl: 60,
        timeNs: BigInt(Date.now()) * 1_000_000n,
        filter: agentFilter('choria_provision'),
        payload: '{"agent":"choria_provision","action":"jwt","data":{"token":""}}',
        replyTo: 'provisioning.reply.x.y',
      },
      signer,
    );
    assertValid('v2', 'request', encoded.requestJson);
    assertValid('v2', 'secure_request', encoded.secureRequestJson);
    assertValid('v2', 'transport', encoded.transportJson);
    const reply = v2Codec.encodeReply({
      requestId: 'y',
      sender: 'node1',
      agent: 'choria_provision',
      timeNs: BigInt(Date.now()) * 1_000_000n,
      body: 'pong',
    });
    assertValid('v2', 'reply', reply.replyJson);
    assertValid('v2', 'secure_reply', reply.secureReplyJson);
    assertValid('v2', 'transport', reply.transportJson);
  });

  it('tolerates replies carrying the request protocol constant (the upstream schema defect)', () => {
    const replyJson = v2Layers
      .buildReply({ requestId: 'id1', sender: 'node1', agent: 'rpcutil', timeNs: 2n, body: 'pong' })
      .replace('io.choria.protocol.v2.reply', 'io.choria.protocol.v2.request');
    const transport = transportJson(v2Layers, v2Layers.buildSecureReply(replyJson).json, { sender: 'node1' });
    expect(v2Codec.decodeReply(transport)).toMatchObject({ requestId: 'id1', sender: 'node1', body: 'pong' });
  });

  it('rejects a reply with a wrong hash', () => {
    const replyJson = v2Layers.buildReply({
      requestId: 'id1',
      sender: 'node1',
      agent: 'rpcutil',
      timeNs: 2n,
      body: 'pong',
    });
    const secure = JSON.parse(v2Layers.buildSecureReply(replyJson).json) as Record<string, string>;
    secure['hash'] = Buffer.alloc(32).toString('base64');
    const transport = transportJson(v2Layers, JSON.stringify(secure), {});
    expect(() => v2Codec.decodeReply(transport)).toThrow(/hash does not match/);
  });

  it('rejects ids that are empty or not subject-safe', () => {
    const req = {
      sender: 's',
      callerId: 'c',
      collective: 'provisioning',
      agent: 'a',
      ttl: 60,
      timeNs: 1n,
      filter: agentFilter('a'),
      payload: '{}',
      replyTo: 'r',
    };
    expect(() => v2Codec.encodeRequest({ ...req, id: '' }, new InsecureSigner('v2', 'c'))).toThrow(/subject-safe/);
    expect(() => v2Codec.encodeRequest({ ...req, id: 'a.b' }, new InsecureSigner('v2', 'c'))).toThrow(/subject-safe/);
  });
});

describe('request ids', () => {
  it('v1 ids are 32 lowercase hex characters and unique', () => {
    const a = newV1RequestId();
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(newV1RequestId()).not.toBe(a);
  });

  it('v2 ids are 27-character base62 KSUIDs that sort by time', () => {
    const early = newKsuid(Date.UTC(2020, 0, 1));
    const late = newKsuid(Date.UTC(2026, 0, 1));
    expect(early).toMatch(/^[0-9A-Za-z]{27}$/);
    expect(late).toMatch(/^[0-9A-Za-z]{27}$/);
    expect(early < late).toBe(true);
    expect(newKsuid()).not.toBe(newKsuid());
  });
});

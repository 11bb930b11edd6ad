import { verify, createPublicKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readVectorJson, vectorPath } from '@choria-provisioner/test-support/vectors';
import { ProtocolError } from '../../src/choria/errors.js';
import { DISCOVERY_PAYLOAD } from '../../src/choria/protocol/codec.js';
import { agentFilter } from '../../src/choria/protocol/filter.js';
import { parseRpcReply } from '../../src/choria/protocol/mcorpc.js';
import { v1Codec, v1Layers, V1_DISCOVERY_MESSAGE } from '../../src/choria/protocol/v1.js';
import { FileSigner } from '../../src/choria/security/file.js';
import { InsecureSigner } from '../../src/choria/security/insecure.js';
import { assertValid } from './support/schemas.js';

interface Layered {
  publish_subject: string;
  reply_subject: string;
  request: {
    payload: string;
    request_json: string;
    secure_request_json: string;
    transport_json: string;
    signature_base64?: string;
  };
  reply?: {
    payload: string;
    reply_json: string;
    secure_reply_json: string;
    transport_json: string;
    secure_reply_hash: string;
  };
}

const BROKER = 'nats://broker.example.net:4222';
const T0 = 1_700_000_000n * 1_000_000_000n;
const insecure = new InsecureSigner('v1', 'choria=provisioner.example.net');

describe('protocol v1 known answers', () => {
  it('builds the discovery request byte for byte, with cGluZw== as message', () => {
    const v = readVectorJson<Layered>('protocol', 'derived', 'v1-discovery-insecure.json');
    const encoded = v1Codec.encodeRequest(
      {
        id: 'a2f0ca717c694f2086cfa81b6c494648',
        sender: 'provisioner.example.net',
        callerId: 'choria=provisioner.example.net',
        collective: 'provisioning',
        agent: 'discovery',
        ttl: 60,
        timeNs: T0,
        filter: agentFilter('choria_provision'),
        payload: DISCOVERY_PAYLOAD,
        replyTo: v.reply_subject,
        trace: [[BROKER, 'provisioner.example.net', BROKER]],
      },
      insecure,
    );
    expect(V1_DISCOVERY_MESSAGE).toBe('cGluZw==');
    expect(encoded.requestJson).toBe(v.request.request_json);
    expect(encoded.secureRequestJson).toBe(v.request.secure_request_json);
    expect(encoded.transportJson).toBe(v.request.transport_json);
    expect(encoded.signature).toBe('insecure');
  });

  it('builds the pong reply byte for byte and decodes it back', () => {
    const v = readVectorJson<Layered>('protocol', 'derived', 'v1-discovery-insecure.json');
    const reply = v.reply!;
    const encoded = v1Codec.encodeReply({
      requestId: 'a2f0ca717c694f2086cfa81b6c494648',
      sender: 'node1.example.net',
      agent: 'discovery',
      timeNs: T0 + 1_000_000_000n,
      body: 'pong',
      trace: [[BROKER, 'node1.example.net', BROKER]],
    });
    expect(encoded.replyJson).toBe(reply.reply_json);
    expect(encoded.secureReplyJson).toBe(reply.secure_reply_json);
    expect(encoded.transportJson).toBe(reply.transport_json);
    expect(encoded.hash).toBe(reply.secure_reply_hash);

    const decoded = v1Codec.decodeReply(reply.transport_json);
    expect(decoded).toMatchObject({
      version: 'v1',
      requestId: 'a2f0ca717c694f2086cfa81b6c494648',
      sender: 'node1.example.net',
      agent: 'discovery',
      time: 1700000001,
      body: 'pong',
    });
    expect(decoded.headers.sender).toBe('node1.example.net');
  });

  it('reproduces the rpcutil#inventory request and parses its reply', () => {
    const v = readVectorJson<Layered>('protocol', 'derived', 'v1-rpcutil-inventory-insecure.json');
    const encoded = v1Codec.encodeRequest(
      {
        id: '5f0e3c1b9a2d4e6f8a7b6c5d4e3f2a1b',
        sender: 'provisioner.example.net',
        callerId: 'choria=provisioner.example.net',
        collective: 'provisioning',
        agent: 'rpcutil',
        ttl: 60,
        timeNs: T0,
        filter: agentFilter('rpcutil'),
        payload: v.request.payload,
        replyTo: v.reply_subject,
        trace: [[BROKER, 'provisioner.example.net', BROKER]],
      },
      insecure,
    );
    expect(encoded.transportJson).toBe(v.request.transport_json);

    const decoded = v1Codec.decodeReply(Buffer.from(v.reply!.transport_json));
    expect(decoded.sender).toBe('node1.example.net');
    expect(decoded.body).toBe(v.reply!.payload);
    const body = parseRpcReply(decoded.body);
    expect(body).toMatchObject({ action: 'inventory', statuscode: 0, statusmsg: 'OK' });
    expect((body.data as { version: string }).version).toBe('0.29.4');
  });

  it('decodes the request layers as a server would', () => {
    const v = readVectorJson<Layered>('protocol', 'derived', 'v1-rpcutil-inventory-insecure.json');
    const req = v1Codec.decodeRequest(v.request.transport_json);
    expect(req).toMatchObject({
      version: 'v1',
      id: '5f0e3c1b9a2d4e6f8a7b6c5d4e3f2a1b',
      sender: 'provisioner.example.net',
      callerId: 'choria=provisioner.example.net',
      collective: 'provisioning',
      agent: 'rpcutil',
      ttl: 60,
      time: 1700000000,
      signature: 'insecure',
      credential: 'insecure',
      requestJson: v.request.request_json,
    });
    expect(req.headers.replyTo).toBe(v.reply_subject);
    expect(req.payload.toString()).toBe(v.request.payload);
    expect(req.filter.agent).toEqual(['rpcutil']);
  });

  it('reproduces the RSA-signed request byte for byte', () => {
    const v = readVectorJson<Layered & { request: { pubcert: string } }>(
      'protocol',
      'derived',
      'v1-signed-request-rip.mcollective.json',
    );
    const signer = FileSigner.fromFiles(
      vectorPath('protocol', 'derived', 'keys', 'rip.mcollective-cert.pem'),
      vectorPath('protocol', 'derived', 'keys', 'rip.mcollective-key.pem'),
      'rip.mcollective',
    );
    expect(signer.callerId).toBe('choria=rip.mcollective');
    expect(signer.credential).toBe(v.request.pubcert);
    const encoded = v1Codec.encodeRequest(
      {
        id: 'a2f0ca717c694f2086cfa81b6c494648',
        sender: 'rip.mcollective',
        callerId: signer.callerId,
        collective: 'provisioning',
        agent: 'choria_provision',
        ttl: 60,
        timeNs: T0,
        filter: agentFilter('choria_provision'),
        payload: v.request.payload,
        replyTo: v.reply_subject,
      },
      signer,
    );
    expect(encoded.requestJson).toBe(v.request.request_json);
    expect(encoded.signature).toBe(v.request.signature_base64);
    expect(encoded.secureRequestJson).toBe(v.request.secure_request_json);
    expect(encoded.transportJson).toBe(v.request.transport_json);
    const certKey = createPublicKey(v.request.pubcert);
    expect(verify('sha256', Buffer.from(encoded.requestJson), certKey, Buffer.from(encoded.signature, 'base64'))).toBe(
      true,
    );
  });
});

describe('protocol v1 layers validate against the go-choria schemas', () => {
  it('request, secure request and transport', () => {
    const signer = FileSigner.fromFiles(
      vectorPath('protocol', 'derived', 'keys', 'rip.mcollective-cert.pem'),
      vectorPath('protocol', 'derived', 'keys', 'rip.mcollective-key.pem'),
      'rip.mcollective',
    );
    for (const s of [insecure, signer]) {
      const encoded = v1Codec.encodeRequest(
        {
          id: '0123456789abcdef0123456789abcdef',
          sender: 'provisioner.example.net',
          callerId: s.callerId,
          collective: 'provisioning',
          agent: 'choria_provision',
          ttl: 30,
          timeNs: BigInt(Date.now()) * 1_000_000n,
          filter: agentFilter('choria_provision', ['node1.example.net']),
          payload: '{"agent":"choria_provision","action":"restart","data":{"splay":1,"token":""}}',
          replyTo: 'provisioning.reply.x.0123456789abcdef0123456789abcdef',
          trace: [['nats://127.0.0.1:4222', 'provisioner.example.net', 'nats://127.0.0.1:4222']],
        },
        s,
      );
      assertValid('v1', 'request', encoded.requestJson);
      assertValid('v1', 'secure_request', encoded.secureRequestJson);
      assertValid('v1', 'transport', encoded.transportJson);
    }
  });

  it('the validators reject what servers reject (not vacuous)', () => {
    const bad = JSON.parse(
      v1Layers.buildRequest({
        id: '0123456789abcdef0123456789abcdef',
        sender: 's',
        callerId: 'choria=s',
        collective: 'provisioning',
        agent: 'a',
        ttl: 60,
        timeNs: 1_000_000_000n,
        filter: agentFilter('a'),
        payload: 'x',
        replyTo: '',
      }),
    ) as { envelope: Record<string, unknown> };
    bad.envelope['ttl'] = 29;
    expect(() => assertValid('v1', 'request', JSON.stringify(bad))).toThrow(/minimum/);
    delete (bad.envelope['filter'] as Record<string, unknown>)['compound'];
    bad.envelope['ttl'] = 60;
    expect(() => assertValid('v1', 'request', JSON.stringify(bad))).toThrow(/compound/);
  });

  it('reply, secure reply and transport', () => {
    const encoded = v1Codec.encodeReply({
      requestId: '0123456789abcdef0123456789abcdef',
      sender: 'node1.example.net',
      agent: 'choria_provision',
      timeNs: BigInt(Date.now()) * 1_000_000n,
      body: '{"action":"jwt","statuscode":0,"statusmsg":"OK","data":{"jwt":"x","ecdh_public":"y"}}',
    });
    assertValid('v1', 'reply', encoded.replyJson);
    assertValid('v1', 'secure_reply', encoded.secureReplyJson);
    assertValid('v1', 'transport', encoded.transportJson);
  });
});

describe('protocol v1 rules', () => {
  const base = {
    id: '0123456789abcdef0123456789abcdef',
    sender: 's',
    callerId: 'choria=s',
    collective: 'provisioning',
    agent: 'rpcutil',
    ttl: 60,
    timeNs: 1_700_000_000_000_000_000n,
    filter: agentFilter('rpcutil'),
    payload: '{}',
    replyTo: '',
  };

  it('requires 32-character request ids and ttl >= 30', () => {
    expect(() => v1Layers.buildRequest({ ...base, id: 'short' })).toThrow(/exactly 32 characters, got 5/);
    expect(() => v1Layers.buildRequest({ ...base, ttl: 29 })).toThrow(/ttl must be an integer >= 30, got 29/);
    expect(() => v1Layers.buildRequest({ ...base, ttl: 30 })).not.toThrow();
  });

  it('sends all five filter arrays even when unused', () => {
    const json = JSON.parse(v1Layers.buildRequest(base)) as { envelope: { filter: Record<string, unknown> } };
    expect(json.envelope.filter).toEqual({ fact: [], cf_class: [], agent: ['rpcutil'], identity: [], compound: [] });
    expect(v1Layers.readRequest(v1Layers.buildRequest(base)).filter.identity).toEqual([]);
  });

  it('rejects a reply whose hash does not match', () => {
    const v = readVectorJson<Layered>('protocol', 'derived', 'v1-discovery-insecure.json');
    const secure = JSON.parse(v.reply!.secure_reply_json) as Record<string, string>;
    secure['message'] = (secure['message'] as string).replace('node1', 'node2');
    const transport = JSON.stringify({
      protocol: 'choria:transport:1',
      data: Buffer.from(JSON.stringify(secure)).toString('base64'),
      headers: {},
    });
    expect(() => v1Codec.decodeReply(transport)).toThrow(ProtocolError);
    expect(() => v1Codec.decodeReply(transport)).toThrow(/hash does not match/);
  });

  it('rejects other protocols, bad base64 and non-JSON with a reason', () => {
    expect(() => v1Codec.decodeReply('{"protocol":"io.choria.protocol.v2.transport","data":"","headers":{}}')).toThrow(
      /protocol "io.choria.protocol.v2.transport" is not choria:transport:1/,
    );
    expect(() => v1Codec.decodeReply('{"protocol":"choria:transport:1","data":"@@@","headers":{}}')).toThrow(
      /not valid base64/,
    );
    expect(() => v1Codec.decodeReply('garbage')).toThrow(/not valid JSON/);
  });

  it('refuses a v2 signer', () => {
    const v2 = new InsecureSigner('v2', 'caller');
    expect(() =>
      v1Codec.encodeRequest(
        {
          id: '0123456789abcdef0123456789abcdef',
          sender: 's',
          callerId: 'c',
          collective: 'provisioning',
          agent: 'a',
          ttl: 60,
          timeNs: T0,
          filter: agentFilter('a'),
          payload: '{}',
          replyTo: 'r',
        },
        v2,
      ),
    ).toThrow(/v2 signer cannot sign v1/);
  });
});

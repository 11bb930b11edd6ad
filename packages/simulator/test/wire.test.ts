import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';
import { goStdBase64Decode } from '../src/wire/base64.js';
import { applyPayloadBase64Tolerance, decodeRequest, ttlAccepted } from '../src/wire/decode.js';
import { encodeReply } from '../src/wire/encode.js';
import { FilterMatcher } from '../src/wire/filter.js';
import { decodeGoStringMap, decodeGoStruct, goJsonStringify, parseGoJson } from '../src/wire/gojson.js';
import { createValidators } from '../src/wire/validate.js';
import { buildRequest } from './support/mini-client.js';

interface DerivedVector {
  request: { request_json: string; transport_json: string; payload: string };
  reply: { reply_json: string; transport_json: string; secure_reply_hash: string };
}

const validators = createValidators();
const bytes = (s: string): Uint8Array => Buffer.from(s, 'utf8');

describe('Go base64 rules', () => {
  it('accepts only standard padded base64, ignoring CR/LF', () => {
    expect(goStdBase64Decode('cGluZw==')?.toString()).toBe('ping');
    expect(goStdBase64Decode('cGlu\nZw==')?.toString()).toBe('ping');
    expect(goStdBase64Decode('cGluZw')).toBeUndefined();
    expect(goStdBase64Decode('cGluZw=')).toBeUndefined();
    expect(goStdBase64Decode('a-_b')).toBeUndefined();
    expect(goStdBase64Decode('ab=c')).toBeUndefined();
  });

  it('applies the server payload tolerance (base64-decode the payload when it can)', () => {
    expect(applyPayloadBase64Tolerance(Buffer.from('cGluZw==')).toString()).toBe('ping');
    // raw "ping" is itself valid base64 and decodes to three garbage bytes
    expect(applyPayloadBase64Tolerance(Buffer.from('ping'))).toEqual(Buffer.from([0xa6, 0x29, 0xe0]));
    expect(applyPayloadBase64Tolerance(Buffer.from('{"a":1}')).toString()).toBe('{"a":1}');
  });
});

describe('decodeRequest', () => {
  it('decodes the derived v1 discovery vector to a ping payload', () => {
    const v = readVectorJson<DerivedVector>('protocol', 'derived', 'v1-discovery-insecure.json');
    const r = decodeRequest(bytes(v.request.transport_json), validators);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.request).toMatchObject({
      version: 'v1',
      requestId: 'a2f0ca717c694f2086cfa81b6c494648',
      senderId: 'provisioner.example.net',
      callerId: 'choria=provisioner.example.net',
      collective: 'provisioning',
      agent: 'discovery',
      ttl: 60,
      timeMs: 1_700_000_000_000,
      replyTo: 'provisioning.reply.6079c8d10a2ceceb5904de01a22e9b41.a2f0ca717c694f2086cfa81b6c494648',
    });
    expect(r.request.payload.toString()).toBe('ping');
  });

  it('decodes the derived v2 gen25519 vector', () => {
    const v = readVectorJson<DerivedVector>('protocol', 'derived', 'v2-gen25519-signed.json');
    const r = decodeRequest(bytes(v.request.transport_json), validators);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.request.version).toBe('v2');
    expect(r.request.requestId).toBe('2Yc1Q8u6mGd9pWcY0Wl0bM3xkZr');
    expect(r.request.callerId).toBe('provisioner_signer');
    expect(Math.round(r.request.timeMs)).toBe(1_700_000_000_123);
    expect(r.request.payload.toString()).toBe(v.request.payload);
  });

  it('rejects schema violations: request id length, ttl below 30, missing filter arrays', () => {
    const wrongId = decodeRequest(
      bytes(buildRequest({ version: 'v1', agent: 'rpcutil', body: {}, requestId: 'abc' }).data),
      validators,
    );
    expect(wrongId.ok).toBe(false);
    if (!wrongId.ok) expect(wrongId.detail).toMatch(/requestid/);
    const lowTtl = decodeRequest(
      bytes(buildRequest({ version: 'v1', agent: 'rpcutil', body: {}, ttl: 29 }).data),
      validators,
    );
    expect(lowTtl.ok).toBe(false);
    const noFilter = decodeRequest(
      bytes(buildRequest({ version: 'v1', agent: 'rpcutil', body: {}, filter: { agent: ['rpcutil'] } }).data),
      validators,
    );
    expect(noFilter.ok).toBe(false);
    // v2 makes the filter optional and has no ttl minimum of 30
    const v2 = decodeRequest(
      bytes(buildRequest({ version: 'v2', agent: 'rpcutil', body: {}, filter: null, ttl: 5 }).data),
      validators,
    );
    expect(v2.ok).toBe(true);
  });

  it('rejects an unknown transport protocol', () => {
    const r = decodeRequest(bytes('{"protocol":"choria:transport:9","data":"","headers":{}}'), validators);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.detail).toContain('do not know how to create a TransportMessage');
  });

  it('checks the ttl strictly on both sides', () => {
    const r = decodeRequest(
      bytes(buildRequest({ version: 'v1', agent: 'rpcutil', body: {}, timeSec: 1_700_000_000, ttl: 60 }).data),
      validators,
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(ttlAccepted(r.request, 1_700_000_059_999)).toBe(true);
    expect(ttlAccepted(r.request, 1_700_000_060_000)).toBe(false);
    expect(ttlAccepted(r.request, 1_699_999_940_001)).toBe(true);
    expect(ttlAccepted(r.request, 1_699_999_940_000)).toBe(false);
  });
});

describe('encodeReply', () => {
  it('reproduces the derived v1 discovery reply byte for byte', () => {
    const v = readVectorJson<DerivedVector>('protocol', 'derived', 'v1-discovery-insecure.json');
    const out = encodeReply({
      version: 'v1',
      requestId: 'a2f0ca717c694f2086cfa81b6c494648',
      identity: 'node1.example.net',
      agent: 'discovery',
      body: 'pong',
      brokerUrl: 'nats://broker.example.net:4222',
      nowMs: 1_700_000_001_000,
    });
    expect(out.toString()).toBe(v.reply.transport_json);
  });

  it('encodes v2 replies with base64 layers, nanosecond time and a matching hash', () => {
    const out = JSON.parse(
      encodeReply({
        version: 'v2',
        requestId: 'x1',
        identity: 'n1',
        agent: 'discovery',
        body: 'pong',
        brokerUrl: 'nats://b:4222',
        nowMs: 1_700_000_000_123,
      }).toString(),
    ) as { protocol: string; data: string; headers: Record<string, unknown> };
    expect(out.protocol).toBe('io.choria.protocol.v2.transport');
    expect(out.headers).toEqual({ sender: 'n1', trace: [['nats://b:4222', 'n1', 'nats://b:4222']] });
    const secure = JSON.parse(Buffer.from(out.data, 'base64').toString()) as { reply: string; hash: string };
    const replyText = Buffer.from(secure.reply, 'base64').toString();
    expect(replyText).toBe(
      '{"protocol":"io.choria.protocol.v2.reply","message":"cG9uZw==","request":"x1","sender":"n1","agent":"discovery","time":1700000000123000000}',
    );
    expect(secure.hash).toBe(createHash('sha256').update(replyText).digest('base64'));
  });
});

describe('Go JSON decoding', () => {
  const restart = { typeName: 'provision.RestartRequest', fields: { token: 'string', splay: 'int' } } as const;
  const configure = {
    typeName: 'provision.ConfigureRequest',
    fields: { action_policies: 'map[string]string' },
  } as const;

  it('requires integers literally, like Go', () => {
    expect(decodeGoStruct(restart, parseGoJson('{"splay":1,"token":"t"}'))).toEqual({
      ok: true,
      value: { splay: 1, token: 't' },
    });
    for (const lit of ['1.5', '1.0', '1e2']) {
      expect(decodeGoStruct(restart, parseGoJson(`{"splay":${lit}}`))).toEqual({
        ok: false,
        error: `json: cannot unmarshal number ${lit} into Go struct field RestartRequest.splay of type int`,
      });
    }
    expect(decodeGoStruct(restart, parseGoJson('{"splay":"1"}'))).toEqual({
      ok: false,
      error: 'json: cannot unmarshal string into Go struct field RestartRequest.splay of type int',
    });
  });

  it('matches keys case-insensitively, ignores unknown keys and null', () => {
    expect(decodeGoStruct(restart, parseGoJson('{"Token":"x","other":[1],"splay":null}'))).toEqual({
      ok: true,
      value: { token: 'x' },
    });
    expect(decodeGoStruct(restart, parseGoJson('[1]'))).toEqual({
      ok: false,
      error: 'json: cannot unmarshal array into Go value of type provision.RestartRequest',
    });
  });

  it('requires string map values', () => {
    expect(decodeGoStruct(configure, parseGoJson('{"action_policies":{"a.policy":1}}'))).toEqual({
      ok: false,
      error: 'json: cannot unmarshal number into Go struct field ConfigureRequest.action_policies of type string',
    });
    expect(decodeGoStringMap('{"a":"1","b":2}')).toEqual({
      ok: false,
      error: 'json: cannot unmarshal number into Go value of type string',
    });
    expect(decodeGoStringMap('{"a":"1"}')).toEqual({ ok: true, value: { a: '1' } });
    expect(decodeGoStringMap('nope')).toEqual({
      ok: false,
      error: "invalid character 'o' in literal null (expecting 'u')",
    });
    expect(decodeGoStringMap('x')).toEqual({
      ok: false,
      error: "invalid character 'x' looking for beginning of value",
    });
  });

  it('escapes like Go', () => {
    expect(goJsonStringify({ a: '<x>&' })).toBe('{"a":"\\u003cx\\u003e\\u0026"}');
  });
});

describe('filters', () => {
  const m = new FilterMatcher();
  const node = {
    identity: 'web1.example.net',
    agents: ['choria_provision', 'discovery', 'rpcutil'],
    facts: { country: 'mt', os: { family: 'linux' } },
  };
  const f = (x: Partial<Record<'fact' | 'cf_class' | 'agent' | 'identity' | 'compound', unknown[]>>) =>
    ({
      fact: [],
      cf_class: [],
      agent: [],
      identity: [],
      compound: [],
      ...x,
    }) as Parameters<FilterMatcher['matches']>[0];

  it('matches identities exactly or by /regex/ (OR) and agents (AND)', () => {
    expect(m.matches(f({}), node)).toBe(true);
    expect(m.matches(f({ identity: ['other', 'web1.example.net'] }), node)).toBe(true);
    expect(m.matches(f({ identity: ['/^web\\d+/'] }), node)).toBe(true);
    expect(m.matches(f({ identity: ['/^db/'] }), node)).toBe(false);
    expect(m.matches(f({ agent: ['choria_provision', 'rpcutil'] }), node)).toBe(true);
    expect(m.matches(f({ agent: ['choria_provision', 'puppet'] }), node)).toBe(false);
    expect(m.matches(f({ agent: ['/^choria_/'] }), node)).toBe(true);
  });

  it('matches facts and never classes or compound filters', () => {
    expect(m.matches(f({ fact: [{ fact: 'country', operator: '==', value: 'MT' }] }), node)).toBe(true);
    expect(m.matches(f({ fact: [{ fact: 'os.family', operator: '=~', value: '/lin/' }] }), node)).toBe(true);
    expect(m.matches(f({ fact: [{ fact: 'missing', operator: '==', value: 'x' }] }), node)).toBe(false);
    expect(m.matches(f({ cf_class: ['apache'] }), node)).toBe(false);
    expect(m.matches(f({ compound: [[{ expr: 'true' }]] }), node)).toBe(false);
  });
});

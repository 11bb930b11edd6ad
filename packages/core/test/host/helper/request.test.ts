import { describe, expect, it } from 'vitest';
import { encodeHelperRequest } from '../../../src/host/helper/request.js';
import { goJsonStringify, type GoJsonValue } from '../../../src/util/go-json.js';
import type { HelperRequest } from '../../../src/host/helper/types.js';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface JwtKat {
  server_tokens: Record<string, { signing_string?: string }>;
  provisioning_tokens: Record<string, string>;
}
const kat = readVectorJson<JwtKat>('tokens', 'jwt-kat.json');

/** The payload segment of a Go-signed JWT: bytes produced by Go's json.Marshal. */
function goPayload(token: string): string {
  const segment = token.split('.')[1] ?? '';
  return Buffer.from(segment, 'base64url').toString('utf8');
}

describe('encodeHelperRequest', () => {
  it('writes the five keys in Go struct order with null for disabled features', () => {
    const req: HelperRequest = {
      identity: 'n1.example.net',
      csr: null,
      ed25519_pubkey: null,
      inventory: '{}',
      jwt: null,
    };
    expect(encodeHelperRequest(req)).toBe(
      '{"identity":"n1.example.net","csr":null,"ed25519_pubkey":null,"inventory":"{}","jwt":null}',
    );
  });

  it('orders nested feature objects like the Go structs and drops foreign keys', () => {
    const req = {
      identity: 'n1',
      csr: { ssldir: '/etc/choria/ssl', public_key: 'PK', csr: 'CSR', extra: 'dropped' },
      ed25519_pubkey: { signature: 'sig', directory: '/etc/choria', public_key: 'ab' },
      inventory: '{"facts":{}}',
      jwt: null,
    } as HelperRequest;
    expect(encodeHelperRequest(req)).toBe(
      '{"identity":"n1","csr":{"csr":"CSR","public_key":"PK","ssldir":"/etc/choria/ssl"},' +
        '"ed25519_pubkey":{"public_key":"ab","directory":"/etc/choria","signature":"sig"},' +
        '"inventory":"{\\"facts\\":{}}","jwt":null}',
    );
  });

  it('delivers the inventory as a JSON string, not an object', () => {
    const inventory = JSON.stringify({ agents: ['rpcutil'], facts: { role: 'web' }, upgradable: true });
    const text = encodeHelperRequest({ identity: 'n1', csr: null, ed25519_pubkey: null, inventory, jwt: null });
    const decoded = JSON.parse(text) as { inventory: unknown };
    expect(typeof decoded.inventory).toBe('string');
    expect(JSON.parse(decoded.inventory as string)).toEqual({
      agents: ['rpcutil'],
      facts: { role: 'web' },
      upgradable: true,
    });
  });

  it('escapes <, >, &, U+2028 and U+2029 as Go does, inside the inventory string too', () => {
    const req: HelperRequest = {
      identity: 'a<b>&c',
      csr: null,
      ed25519_pubkey: null,
      inventory: '{"facts":{"x":"<&>\u2028\u2029"}}',
      jwt: null,
    };
    expect(encodeHelperRequest(req)).toBe(
      '{"identity":"a\\u003cb\\u003e\\u0026c","csr":null,"ed25519_pubkey":null,' +
        '"inventory":"{\\"facts\\":{\\"x\\":\\"\\u003c\\u0026\\u003e\\u2028\\u2029\\"}}","jwt":null}',
    );
  });

  it('escapes control characters like Go 1.22+ and replaces lone surrogates', () => {
    const req: HelperRequest = {
      identity: 'x\b\f\n\r\t\u0001\u007f\uD800y',
      csr: null,
      ed25519_pubkey: null,
      inventory: '',
      jwt: null,
    };
    expect(encodeHelperRequest(req)).toBe(
      '{"identity":"x\\b\\f\\n\\r\\t\\u0001\u007f\uFFFDy","csr":null,"ed25519_pubkey":null,"inventory":"","jwt":null}',
    );
  });

  it('reproduces Go json.Marshal bytes of a server token payload (vector B_rs256_permissions)', () => {
    const signing = kat.server_tokens['B_rs256_permissions']?.signing_string ?? '';
    const goBytes = goPayload(signing);
    expect(goBytes).toContain('\\u003e'); // the vector really exercises the escaping
    expect(goJsonStringify(JSON.parse(goBytes) as GoJsonValue)).toBe(goBytes);
  });

  it('embeds verified provisioning claims byte for byte as Go marshals them', () => {
    for (const name of ['alg_none', 'ed25519_valid', 'ed25519_chain_issexp']) {
      const claimsJson = goPayload(kat.provisioning_tokens[name] ?? '');
      const req: HelperRequest = {
        identity: 'n1',
        csr: null,
        ed25519_pubkey: null,
        inventory: '{}',
        jwt: JSON.parse(claimsJson) as HelperRequest['jwt'],
      };
      expect(encodeHelperRequest(req)).toBe(
        `{"identity":"n1","csr":null,"ed25519_pubkey":null,"inventory":"{}","jwt":${claimsJson}}`,
      );
    }
  });

  it('never contains a raw newline, so it doubles as a JSON-lines record', () => {
    const req: HelperRequest = {
      identity: 'n1',
      csr: null,
      ed25519_pubkey: null,
      inventory: '{\n"a": "b\nc"\n}',
      jwt: null,
    };
    expect(encodeHelperRequest(req)).not.toMatch(/[\n\r\u2028\u2029]/);
  });
});

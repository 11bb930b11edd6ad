import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readVector, readVectorJson } from '@choria-provisioner/test-support/vectors';
import { generateX25519, x25519SharedSecret } from '../src/crypto/ecdh.js';
import { ksuidSeconds, newKsuid } from '../src/crypto/ksuid.js';
import { decryptLegacyPemKey } from '../src/crypto/pem.js';
import { checkServerJwt, parseServerJwtVerification } from '../src/crypto/server-jwt.js';
import { encryptLegacyPem } from './support/legacy-pem.js';

interface PemKat {
  name: string;
  shared_secret_hex: string;
  plaintext_hex: string;
  pem: string;
}

interface JwtKat {
  keys: { node_public_hex: string; org_issuer_public_hex: string; provisioner_signing_public_hex: string };
  server_tokens: Record<string, { jwt: string }>;
}

describe('legacy PEM decryption (node side of configure)', () => {
  const kat = readVectorJson<{ pem_kats: PemKat[]; wrong_password: { go_error: string } }>(
    'crypto',
    'ecdh-pem-kat.json',
  );

  it.each(kat.pem_kats.map((k) => [k.name, k] as const))('decrypts %s', (_name, k) => {
    const r = decryptLegacyPemKey(k.pem, Buffer.from(k.shared_secret_hex, 'hex'));
    expect(r).toEqual({ ok: true, der: Buffer.from(k.plaintext_hex, 'hex') });
  });

  it('reports a wrong password and an unencrypted key like Go', () => {
    const first = kat.pem_kats[0];
    if (first === undefined) throw new Error('no kat');
    const wrong = decryptLegacyPemKey(first.pem, Buffer.alloc(32, 7));
    expect(wrong.ok).toBe(false);
    if (!wrong.ok) expect(wrong.error).toBe(kat.wrong_password.go_error);
    const plain = decryptLegacyPemKey(readVector('crypto', 'jwt-signer.pem'), Buffer.alloc(32));
    expect(plain).toEqual({ ok: false, reason: 'not-encrypted', error: 'key is not encrypted' });
    expect(decryptLegacyPemKey('garbage', Buffer.alloc(32))).toMatchObject({ ok: false, error: 'bad key received' });
  });

  it('round-trips with the X25519 shared secret computed on both sides', () => {
    const node = generateX25519();
    const prov = generateX25519();
    const provSecret = x25519SharedSecret(prov.privateKey, node.publicHex);
    const nodeSecret = x25519SharedSecret(node.privateKey, prov.publicHex);
    expect(nodeSecret).toEqual(provSecret);
    const der = createPrivateKey(readVector('crypto', 'jwt-signer.pem')).export({ format: 'der', type: 'pkcs1' });
    expect(decryptLegacyPemKey(encryptLegacyPem(der, provSecret), nodeSecret)).toEqual({ ok: true, der });
    expect(() => x25519SharedSecret(node.privateKey, 'zz')).toThrow("encoding/hex: invalid byte: U+007A 'z'");
    expect(() => x25519SharedSecret(undefined, prov.publicHex)).toThrow('private key not set');
  });
});

describe('KSUID', () => {
  it('embeds the issue second', () => {
    const k = newKsuid(1_700_000_000);
    expect(k).toMatch(/^[0-9A-Za-z]{27}$/);
    expect(ksuidSeconds(k)).toBe(1_700_000_000);
    expect(ksuidSeconds('2YBXZPEtXG2p7ireWxvUz3Gh2CS')).toBeGreaterThan(1_699_000_000);
  });
});

describe('server JWT checks', () => {
  const kat = readVectorJson<JwtKat>('tokens', 'jwt-kat.json');
  const nowMs = 1_700_000_100_000;
  const token = (name: string): string => {
    const t = kat.server_tokens[name];
    if (t === undefined) throw new Error(`no token ${name}`);
    return t.jwt;
  };

  it('accepts the plain EdDSA token with the provisioner signing key', async () => {
    const keys = parseServerJwtVerification({ signerEd25519PublicHex: kat.keys.provisioner_signing_public_hex });
    const r = await checkServerJwt({
      token: token('A_ed25519_plain'),
      identity: 'ginkgo.example.net',
      nodePublicKeyHex: kat.keys.node_public_hex,
      keys,
      nowMs,
    });
    expect(r.problems).toEqual([]);
    expect(r.claims?.['purpose']).toBe('choria_server');
  });

  it('accepts the RS256 token with the RSA public key', async () => {
    const keys = parseServerJwtVerification({ signerPublicPem: readVector('crypto', 'jwt-signer-public.pem') });
    const r = await checkServerJwt({
      token: token('B_rs256_permissions'),
      identity: 'ginkgo.example.net',
      nodePublicKeyHex: kat.keys.node_public_hex,
      keys,
      nowMs,
    });
    expect(r.problems).toEqual([]);
  });

  it('verifies the whole chain of a chain-issued token with the org issuer key', async () => {
    const keys = parseServerJwtVerification({ issuerPublicHex: kat.keys.org_issuer_public_hex });
    const good = await checkServerJwt({
      token: token('C_ed25519_chained'),
      identity: 'ginkgo.example.net',
      nodePublicKeyHex: kat.keys.node_public_hex,
      keys,
      nowMs,
    });
    expect(good.problems).toEqual([]);
    const otherOrg = parseServerJwtVerification({ issuerPublicHex: kat.keys.provisioner_signing_public_hex });
    const bad = await checkServerJwt({
      token: token('C_ed25519_chained'),
      identity: 'ginkgo.example.net',
      nodePublicKeyHex: kat.keys.node_public_hex,
      keys: otherOrg,
      nowMs,
    });
    expect(bad.problems).toContain('chain issuer was not signed by the organisation issuer');
    const late = await checkServerJwt({
      token: token('C_ed25519_chained'),
      identity: 'ginkgo.example.net',
      nodePublicKeyHex: kat.keys.node_public_hex,
      keys,
      nowMs: 1_710_000_001_000,
    });
    expect(late.problems.join('\n')).toMatch(/expired/);
  });

  it('reports wrong identity, wrong key, wrong signer and missing gen25519', async () => {
    const other = generateKeyPairSync('ed25519')
      .publicKey.export({ format: 'der', type: 'spki' })
      .subarray(12)
      .toString('hex');
    const keys = parseServerJwtVerification({ signerEd25519PublicHex: other });
    const r = await checkServerJwt({
      token: token('A_ed25519_plain'),
      identity: 'node1.example.net',
      nodePublicKeyHex: undefined,
      keys,
      nowMs,
    });
    expect(r.problems.some((p) => p.startsWith('identity is "ginkgo.example.net"'))).toBe(true);
    expect(r.problems.some((p) => p.includes('gen25519 was not called'))).toBe(true);
    expect(r.problems.some((p) => p.startsWith('signature does not verify'))).toBe(true);
    const garbage = await checkServerJwt({
      token: 'not-a-jwt',
      identity: 'x',
      nodePublicKeyHex: undefined,
      keys: undefined,
      nowMs,
    });
    expect(garbage.claims).toBeUndefined();
    expect(garbage.problems[0]).toMatch(/^not a JWT/);
  });
});

import { createHash, createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  decryptLegacyPem,
  encryptKeyForNode,
  encryptLegacyPem,
  legacyPemKey,
  x25519PublicFromPrivate,
  x25519SharedSecret,
} from '../../../src/host/security/ecdh-pem.js';
import { decodeFirstPemBlock } from '../../../src/host/security/pem.js';
import { readVector, readVectorJson } from '@choria-provisioner/test-support/vectors';

interface PemKat {
  name: string;
  shared_secret_hex: string;
  iv_hex: string;
  salt_hex: string;
  derived_key_hex: string;
  plaintext_hex: string;
  ciphertext_hex: string;
  pem: string;
}
interface EcdhKat {
  x25519: {
    server_private_hex: string;
    server_public_hex: string;
    provisioner_private_hex: string;
    provisioner_public_hex: string;
    shared_secret_hex: string;
    kat2: {
      provisioner_private_hex: string;
      provisioner_public_hex: string;
      server_public_hex: string;
      shared_secret_hex: string;
    };
    low_order_point: { remote_public_hex: string };
  };
  pem_kats: PemKat[];
  wrong_password: { go_error: string };
}
interface ProvisionKat {
  provisioner_public: string;
  provisioner_private: string;
  server_public: string;
  server_private: string;
  shared_secret: string;
}

const kat = readVectorJson<EcdhKat>('crypto', 'ecdh-pem-kat.json');
const provisionKat = readVectorJson<ProvisionKat>('provision', 'x25519-known-answer.json');
const hex = (value: string): Buffer => Buffer.from(value, 'hex');
const signerPem = readVector('crypto', 'jwt-signer.pem');
const signerDer = decodeFirstPemBlock(signerPem)?.bytes ?? Buffer.alloc(0);

describe('X25519', () => {
  it('matches the go-choria known answer (provision vector)', () => {
    expect(x25519PublicFromPrivate(hex(provisionKat.server_private)).toString('hex')).toBe(provisionKat.server_public);
    expect(x25519PublicFromPrivate(hex(provisionKat.provisioner_private)).toString('hex')).toBe(
      provisionKat.provisioner_public,
    );
    expect(
      x25519SharedSecret(hex(provisionKat.provisioner_private), hex(provisionKat.server_public)).toString('hex'),
    ).toBe(provisionKat.shared_secret);
    expect(
      x25519SharedSecret(hex(provisionKat.server_private), hex(provisionKat.provisioner_public)).toString('hex'),
    ).toBe(provisionKat.shared_secret);
  });

  it('matches the second pair and rejects a low-order point and bad lengths', () => {
    const { kat2, low_order_point: lowOrder } = kat.x25519;
    expect(x25519PublicFromPrivate(hex(kat2.provisioner_private_hex)).toString('hex')).toBe(
      kat2.provisioner_public_hex,
    );
    expect(x25519SharedSecret(hex(kat2.provisioner_private_hex), hex(kat2.server_public_hex)).toString('hex')).toBe(
      kat2.shared_secret_hex,
    );
    expect(() => x25519SharedSecret(hex(kat2.provisioner_private_hex), hex(lowOrder.remote_public_hex))).toThrow(
      'bad input point: low order point',
    );
    expect(() => x25519SharedSecret(hex(kat2.provisioner_private_hex), Buffer.alloc(31, 1))).toThrow(
      'bad point length: 31, expected 32',
    );
  });
});

describe('legacy PEM encryption known answers', () => {
  it('has the five cases', () => {
    expect(kat.pem_kats).toHaveLength(5);
  });

  it.each(kat.pem_kats)('$name: key, ciphertext and PEM text byte for byte', (c) => {
    expect(c.salt_hex).toBe(c.iv_hex.slice(0, 16));
    expect(legacyPemKey(hex(c.shared_secret_hex), hex(c.salt_hex), 32).toString('hex')).toBe(c.derived_key_hex);
    const pem = encryptLegacyPem('RSA PRIVATE KEY', hex(c.plaintext_hex), hex(c.shared_secret_hex), hex(c.iv_hex));
    expect(pem).toBe(c.pem);
    expect(decodeFirstPemBlock(pem)?.bytes.toString('hex')).toBe(c.ciphertext_hex);
    expect(decryptLegacyPem(c.pem, hex(c.shared_secret_hex)).toString('hex')).toBe(c.plaintext_hex);
  });

  it('the RSA cases are the DER of jwt-signer.pem', () => {
    const rsaCases = kat.pem_kats.filter((c) => c.name.endsWith('rsa-der'));
    expect(rsaCases).toHaveLength(2);
    for (const c of rsaCases) expect(c.plaintext_hex).toBe(signerDer.toString('hex'));
  });

  it('Node/OpenSSL decrypts our output with the raw secret as passphrase', () => {
    const c = kat.pem_kats[0];
    if (c === undefined) throw new Error('missing case');
    const pem = encryptLegacyPem('RSA PRIVATE KEY', signerDer, hex(c.shared_secret_hex), hex(c.iv_hex));
    const key = createPrivateKey({ key: pem, format: 'pem', passphrase: hex(c.shared_secret_hex) });
    expect(key.export({ format: 'der', type: 'pkcs1' }).equals(signerDer)).toBe(true);
  });

  it('reports a wrong password with Go text', () => {
    const c = kat.pem_kats[0];
    if (c === undefined) throw new Error('missing case');
    // The vector's wrong password is SHA-256('wrong') (a wrong key passes the padding check about 1 in 256 times).
    const wrong = createHash('sha256').update('wrong').digest();
    expect(() => decryptLegacyPem(c.pem, wrong)).toThrow(kat.wrong_password.go_error);
  });

  it('rejects unencrypted, malformed and unsupported blocks', () => {
    expect(() => decryptLegacyPem('nothing here', Buffer.alloc(1))).toThrow('bad key received');
    expect(() => decryptLegacyPem(signerPem, Buffer.alloc(1))).toThrow('key is not encrypted');
    const c = kat.pem_kats[3];
    if (c === undefined) throw new Error('missing case');
    expect(() => decryptLegacyPem(c.pem.replace('AES-256-CBC,', 'AES-256-CBC'), Buffer.alloc(1))).toThrow(
      'x509: malformed DEK-Info header',
    );
    expect(() => decryptLegacyPem(c.pem.replace('AES-256-CBC', 'BF-CBC'), Buffer.alloc(1))).toThrow(
      'x509: unknown encryption mode',
    );
    expect(() => decryptLegacyPem(c.pem.replace(c.iv_hex, c.iv_hex.slice(2)), Buffer.alloc(1))).toThrow(
      'x509: incorrect IV size',
    );
    expect(() =>
      decryptLegacyPem(c.pem.replace('j7IIBlqMFlygKXEInoFn/w==', 'j7IIBlqMFlygKXEInoFn'), Buffer.alloc(1)),
    ).toThrow('x509: encrypted PEM data is not a multiple of the block size');
  });
});

describe('encryptKeyForNode', () => {
  it('reproduces the upstream-pair RSA known answer with a fixed key pair and IV', () => {
    const c = kat.pem_kats[0];
    if (c === undefined) throw new Error('missing case');
    const result = encryptKeyForNode(signerPem, kat.x25519.server_public_hex, {
      privateKey: hex(kat.x25519.provisioner_private_hex),
      iv: hex(c.iv_hex),
    });
    expect(result).toEqual({ pem: c.pem, ecdhPublicHex: kat.x25519.provisioner_public_hex });
  });

  it('round-trips a fresh RSA key the way the upstream Host test does', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pem = String(privateKey.export({ format: 'pem', type: 'pkcs1' }));
    const result = encryptKeyForNode(`leading text is skipped\n${pem}`, provisionKat.server_public);
    expect(result.ecdhPublicHex).toMatch(/^[0-9a-f]{64}$/);
    expect(result.pem).toMatch(
      /^-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,[0-9a-f]{32}\n\n/,
    );
    expect(result.pem.endsWith('-----END RSA PRIVATE KEY-----\n')).toBe(true);

    // node side: shared secret from its own private key and our public key
    const secret = x25519SharedSecret(hex(provisionKat.server_private), hex(result.ecdhPublicHex));
    const der = decryptLegacyPem(result.pem, secret);
    expect(der.equals(privateKey.export({ format: 'der', type: 'pkcs1' }))).toBe(true);
    const again = encryptKeyForNode(pem, provisionKat.server_public);
    expect(again.ecdhPublicHex).not.toBe(result.ecdhPublicHex);
  });

  it('keeps PKCS#8 bytes but labels them RSA PRIVATE KEY', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pkcs8 = String(privateKey.export({ format: 'pem', type: 'pkcs8' }));
    const result = encryptKeyForNode(pkcs8, provisionKat.server_public);
    expect(decodeFirstPemBlock(result.pem)?.type).toBe('RSA PRIVATE KEY');
    const secret = x25519SharedSecret(hex(provisionKat.server_private), hex(result.ecdhPublicHex));
    expect(decryptLegacyPem(result.pem, secret).equals(privateKey.export({ format: 'der', type: 'pkcs8' }))).toBe(true);
  });

  it('fails with upstream texts', () => {
    expect(() => encryptKeyForNode(signerPem, '')).toThrow(
      'private key received from helper but server did not start Diffie-Hellman exchange',
    );
    expect(() => encryptKeyForNode('not pem', provisionKat.server_public)).toThrow('bad key received');
    expect(() => encryptKeyForNode(signerPem, 'zz')).toThrow("encoding/hex: invalid byte: U+007A 'z'");
    expect(() => encryptKeyForNode('', provisionKat.server_public)).toThrow('no key to encrypt');
    expect(() => encryptKeyForNode(signerPem, kat.x25519.low_order_point.remote_public_hex)).toThrow(
      'bad input point: low order point',
    );
    expect(() => encryptKeyForNode(signerPem, provisionKat.server_public, { privateKey: Buffer.alloc(31) })).toThrow(
      /32 bytes/,
    );
  });
});

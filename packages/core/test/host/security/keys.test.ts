import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSigningKey, loadVerificationKey } from '../../../src/host/security/keys.js';
import { ed25519KeyFromSeed, ed25519PublicHex, readEd25519SeedFile } from '../../../src/util/ed25519.js';
import { decodeHexStrict } from '../../../src/util/go-hex.js';
import { readVector, readVectorJson, vectorPath } from '@choria-provisioner/test-support/vectors';

const dir = mkdtempSync(join(tmpdir(), 'keys-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const kat = readVectorJson<{ keys: Record<string, string> }>('tokens', 'jwt-kat.json').keys;
const signerPublic = readVector('tokens', 'ed25519-signer.public');
const otherPublic = readVector('tokens', 'ed25519-other.public');

describe('decodeHexStrict', () => {
  it('decodes either case', () => {
    expect(decodeHexStrict('0aFf').toString('hex')).toBe('0aff');
    expect(decodeHexStrict('')).toHaveLength(0);
  });

  it.each([
    ['/etc/x', "encoding/hex: invalid byte: U+002F '/'"],
    ['abc', 'encoding/hex: odd length hex string'],
    ['abg', "encoding/hex: invalid byte: U+0067 'g'"],
    ['ab\n', 'encoding/hex: invalid byte: U+000A'],
    ['zz0', "encoding/hex: invalid byte: U+007A 'z'"],
  ])('%j fails with Go text', (input, message) => {
    expect(() => decodeHexStrict(input)).toThrow(message);
  });
});

describe('Ed25519 seeds', () => {
  it.each([
    ['node', kat['node_seed_hex'], kat['node_public_hex']],
    ['org issuer', kat['org_issuer_seed_hex'], kat['org_issuer_public_hex']],
    ['provisioner', kat['provisioner_signing_seed_hex'], kat['provisioner_signing_public_hex']],
  ])('%s seed gives its known public key', (_name, seedHex, publicHex) => {
    const key = ed25519KeyFromSeed(Buffer.from(seedHex ?? '', 'hex'));
    expect(ed25519PublicHex(key)).toBe(publicHex);
  });

  it('reads the upstream seed files', () => {
    expect(ed25519PublicHex(ed25519KeyFromSeed(readEd25519SeedFile(vectorPath('tokens', 'ed25519-signer.seed'))))).toBe(
      signerPublic,
    );
    expect(ed25519PublicHex(ed25519KeyFromSeed(readEd25519SeedFile(vectorPath('tokens', 'ed25519-other.seed'))))).toBe(
      otherPublic,
    );
  });

  it('rejects a seed file with a trailing newline, a short seed and a missing file', () => {
    const seed = readVector('tokens', 'ed25519-other.seed');
    expect(() => readEd25519SeedFile(file('nl.seed', `${seed}\n`))).toThrow('encoding/hex: invalid byte: U+000A');
    expect(() => readEd25519SeedFile(file('short.seed', seed.slice(0, 62)))).toThrow('invalid seed length');
    expect(() => readEd25519SeedFile(join(dir, 'missing.seed'))).toThrow(
      /could not read ed25519 seed file .*missing\.seed/,
    );
    expect(() => ed25519KeyFromSeed(Buffer.alloc(31))).toThrow('invalid seed length');
  });
});

describe('loadVerificationKey', () => {
  it('uses a setting that is not an existing path as a hex public key', () => {
    const key = loadVerificationKey(signerPublic);
    expect(key.kind).toBe('ed25519');
    expect(ed25519PublicHex(key.key)).toBe(signerPublic);
    expect(ed25519PublicHex(loadVerificationKey(signerPublic.toUpperCase()).key)).toBe(signerPublic);
  });

  it('returns the hex error for a missing file path', () => {
    expect(() => loadVerificationKey(join(dir, 'nope.pem'))).toThrow("encoding/hex: invalid byte: U+002F '/'");
  });

  it('rejects a hex literal of the wrong length', () => {
    expect(() => loadVerificationKey(signerPublic.slice(0, 60))).toThrow('invalid ed25519 public key size');
  });

  it('reads hex public key files exactly (no trimming)', () => {
    const key = loadVerificationKey(vectorPath('tokens', 'ed25519-signer.public'));
    expect(key.kind).toBe('ed25519');
    expect(ed25519PublicHex(key.key)).toBe(signerPublic);
    expect(() => loadVerificationKey(file('nl.public', `${signerPublic}\n`))).toThrow(
      'could not parse ed25519 public data: encoding/hex: invalid byte: U+000A',
    );
    expect(() => loadVerificationKey(file('short.public', signerPublic.slice(0, 62)))).toThrow(
      'invalid ed25519 public key size',
    );
  });

  it.each([
    ['SPKI public key', ['crypto', 'jwt-signer-public.pem']],
    ['upstream RSA public key', ['tokens', 'rsa-signer-public.pem']],
    ['expired X.509 certificate', ['tokens', 'broker-rip.mcollective-cert.pem']],
  ])('reads an RSA %s', (_name, parts) => {
    const key = loadVerificationKey(vectorPath(...parts));
    expect(key.kind).toBe('rsa');
    expect(key.key.asymmetricKeyType).toBe('rsa');
    expect(key.key.type).toBe('public');
  });

  it('accepts PKCS#1 bytes under a PUBLIC KEY label', () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pkcs1 = publicKey.export({ format: 'der', type: 'pkcs1' }).toString('base64');
    const key = loadVerificationKey(
      file('pkcs1-as-spki.pem', `-----BEGIN PUBLIC KEY-----\n${pkcs1}\n-----END PUBLIC KEY-----\n`),
    );
    expect(key.kind).toBe('rsa');
  });

  it('rejects an RSA PUBLIC KEY (PKCS#1) file: it is not one of the recognised headers', () => {
    const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pem = publicKey.export({ format: 'pem', type: 'pkcs1' });
    expect(() => loadVerificationKey(file('pkcs1.pem', pem))).toThrow(
      "could not parse ed25519 public data: encoding/hex: invalid byte: U+002D '-'",
    );
  });

  it('rejects a non-RSA public key and garbage under a certificate header', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    const pem = publicKey.export({ format: 'pem', type: 'spki' });
    expect(() => loadVerificationKey(file('ed.pem', pem))).toThrow(
      'could not parse validation certificate: key is not a valid RSA public key',
    );
    expect(() =>
      loadVerificationKey(file('junk.pem', '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')),
    ).toThrow(/^could not parse validation certificate: /);
    expect(() => loadVerificationKey(file('nopem.pem', '-----BEGIN CERTIFICATE----- but no end'))).toThrow(
      'could not parse validation certificate: invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key',
    );
  });

  it('reports unreadable files', () => {
    const sub = join(dir, 'a-directory');
    mkdirSync(sub);
    expect(() => loadVerificationKey(sub)).toThrow(/^could not read validation certificate: /);
  });
});

describe('loadSigningKey', () => {
  it('reads a PKCS#1 RSA key as RS256', () => {
    const key = loadSigningKey(vectorPath('crypto', 'jwt-signer.pem'));
    expect(key.kind).toBe('rsa');
    expect(key.alg).toBe('RS256');
    expect(key.key.type).toBe('private');
  });

  it('reads a PKCS#8 RSA key, also under the RSA PRIVATE KEY label', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const pkcs8 = String(privateKey.export({ format: 'pem', type: 'pkcs8' }));
    expect(loadSigningKey(file('pkcs8.pem', pkcs8)).alg).toBe('RS256');
    const relabelled = pkcs8.replaceAll('PRIVATE KEY', 'RSA PRIVATE KEY');
    expect(loadSigningKey(file('pkcs8-relabelled.pem', relabelled)).alg).toBe('RS256');
  });

  it('reads a 64-byte seed file as EdDSA', () => {
    const key = loadSigningKey(vectorPath('tokens', 'ed25519-other.seed'));
    expect(key.kind).toBe('ed25519');
    expect(key.alg).toBe('EdDSA');
    expect(ed25519PublicHex(key.key)).toBe(otherPublic);
  });

  it('rejects what upstream rejects', () => {
    const seed = readVector('tokens', 'ed25519-other.seed');
    const nl = file('nl.seed', `${seed}\n`);
    expect(() => loadSigningKey(nl)).toThrow(`unsupported key in ${nl}`);
    expect(() => loadSigningKey(file('bad.seed', `${seed.slice(0, 63)}x`))).toThrow(
      "invalid ed25519 seed file: encoding/hex: invalid byte: U+0078 'x'",
    );
    const rsa = readVector('crypto', 'jwt-signer.pem');
    const spaced = file('spaced.pem', ` ${rsa}`);
    expect(() => loadSigningKey(spaced)).toThrow(`unsupported key in ${spaced}`);
    expect(() => loadSigningKey(join(dir, 'none.pem'))).toThrow(/^could not read signing key: /);
  });

  it('rejects non-RSA PKCS#8 keys', () => {
    const ed = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' });
    expect(() => loadSigningKey(file('ed-pkcs8.pem', ed))).toThrow(
      'could not parse signing key: key is not a valid RSA private key',
    );
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' });
    expect(() => loadSigningKey(file('ec-pkcs8.pem', ec))).toThrow(
      'could not parse signing key: key is not a valid RSA private key',
    );
  });

  it('rejects encrypted and corrupt PEM keys', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const encrypted = privateKey.export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase: 'x' });
    const path = file('encrypted.pem', encrypted);
    expect(() => loadSigningKey(path)).toThrow(`unsupported key in ${path}`);
    const legacy = privateKey.export({ format: 'pem', type: 'pkcs1', cipher: 'aes-256-cbc', passphrase: 'x' });
    expect(() => loadSigningKey(file('legacy.pem', legacy))).toThrow(/^could not parse signing key: /);
    expect(() => loadSigningKey(file('truncated.pem', '-----BEGIN RSA PRIVATE KEY-----\nAAAA\n'))).toThrow(
      'could not parse signing key: invalid key: Key must be a PEM encoded PKCS1 or PKCS8 key',
    );
  });

  it('rejects RSA keys shorter than 1024 bits', () => {
    const small = generateKeyPairSync('rsa', { modulusLength: 512 }).privateKey.export({
      format: 'pem',
      type: 'pkcs1',
    });
    expect(() => loadSigningKey(file('small.pem', small))).toThrow(
      /could not parse signing key: crypto\/rsa: 512-bit keys are insecure/,
    );
  });
});

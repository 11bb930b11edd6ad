import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readVector, vectorPath } from '@choria-provisioner/test-support/vectors';
import { SecurityError } from '../../src/choria/errors.js';
import { ChoriaSigner } from '../../src/choria/security/choria.js';
import { callerIdFromJwt, loadChoriaCredentials, signNatsNonce } from '../../src/choria/security/choria-credentials.js';
import { readEd25519SeedFile as readSeedFile } from '../../src/util/ed25519.js';
import { FileSigner } from '../../src/choria/security/file.js';
import { InsecureSigner } from '../../src/choria/security/insecure.js';
import { createSigner, selectProtocol } from '../../src/choria/security/select.js';
import { fakeJwt } from './support/jwt.js';
import { choriaSettingsWith } from '@choria-provisioner/test-support/settings';

const dir = mkdtempSync(join(tmpdir(), 'cpts-choria-sec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const seedPath = vectorPath('protocol', 'derived', 'keys', 'ed25519-signer.seed');
const publicHex = readVector('protocol', 'derived', 'keys', 'ed25519-signer.public');
const certPath = vectorPath('protocol', 'derived', 'keys', 'rip.mcollective-cert.pem');
const keyPath = vectorPath('protocol', 'derived', 'keys', 'rip.mcollective-key.pem');

function writeTemp(name: string, content: string): string {
  const p = join(dir, name);
  writeFileSync(p, content);
  return p;
}

function ed25519Public(hex: string) {
  return createPublicKey({
    key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(hex, 'hex')]),
    format: 'der',
    type: 'spki',
  });
}

describe('InsecureSigner', () => {
  it('uses the v1 literals', () => {
    const s = new InsecureSigner('v1', 'choria=p');
    expect([s.sign(), s.credential, s.callerId, s.kind]).toEqual(['insecure', 'insecure', 'choria=p', 'insecure']);
  });

  it('uses base64(insecure) and a non-empty caller in v2', () => {
    expect(new InsecureSigner('v2', 'choria=p').sign()).toBe('aW5zZWN1cmU=');
    expect(new InsecureSigner('v2', 'choria=p').credential).toBe('choria=p');
    expect(new InsecureSigner('v2', 'up=alice', 'jwt-text').credential).toBe('jwt-text');
  });
});

describe('FileSigner', () => {
  it('signs with RSA PKCS#1 v1.5 SHA-256 and sends the certificate text', () => {
    const s = FileSigner.fromFiles(certPath, keyPath, 'rip.mcollective');
    const data = Buffer.from('{"protocol":"choria:request:1"}');
    const sig = s.sign(data);
    expect(verify('sha256', data, createPublicKey(s.credential), Buffer.from(sig, 'base64'))).toBe(true);
    expect(s.credential).toBe(readVector('protocol', 'derived', 'keys', 'rip.mcollective-cert.pem'));
    expect(s.callerId).toBe('choria=rip.mcollective');
  });

  it('refuses non-RSA keys and names missing files', () => {
    const { privateKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const ed = writeTemp('ed.pem', pem);
    expect(() => FileSigner.fromFiles(certPath, ed, 'x')).toThrow(SecurityError);
    expect(() => FileSigner.fromFiles(certPath, ed, 'x')).toThrow(`private key ${ed} is not an RSA private key`);
    expect(() => FileSigner.fromFiles(join(dir, 'missing.pem'), keyPath, 'x')).toThrow(
      `could not read certificate ${join(dir, 'missing.pem')}`,
    );
  });
});

describe('choria credentials', () => {
  it('reads a 64-hex seed file and derives the matching public key', () => {
    const creds = loadChoriaCredentials(
      writeTemp('c.jwt', `${fakeJwt({ callerid: 'up=alice', public_key: publicHex })}\n`),
      seedPath,
      '<test>',
    );
    expect(creds.publicKeyHex).toBe(publicHex);
    expect(creds.callerId).toBe('up=alice');
    expect(creds.token.endsWith('\n')).toBe(false);
  });

  it('rejects seed files that are not exactly 64 hex characters, without echoing them', () => {
    const seed = readVector('protocol', 'derived', 'keys', 'ed25519-signer.seed');
    const withNewline = writeTemp('nl.seed', `${seed}\n`);
    expect(() => readSeedFile(withNewline)).toThrow(
      /invalid ed25519 seed file .*nl\.seed: encoding\/hex: invalid byte: U\+000A/,
    );
    try {
      readSeedFile(withNewline);
    } catch (err) {
      expect((err as Error).message).not.toContain(seed);
    }
    expect(() => readSeedFile(join(dir, 'absent.seed'))).toThrow(/could not read ed25519 seed file/);
  });

  it('needs a callerid claim and a public key that matches the seed', () => {
    expect(() => callerIdFromJwt(fakeJwt({ sub: 'x' }), 'token.jwt')).toThrow(
      'client JWT token.jwt has no "callerid" claim',
    );
    expect(() => callerIdFromJwt('not-a-jwt', 'token.jwt')).toThrow(/could not decode client JWT token.jwt/);
    const wrong = writeTemp('wrong.jwt', fakeJwt({ callerid: 'c', public_key: '00'.repeat(32) }));
    expect(() => loadChoriaCredentials(wrong, seedPath, '<test>')).toThrow(
      /is for public key 0{64}, but the seed's public key is 3899a8bb/,
    );
    expect(() => loadChoriaCredentials(undefined, seedPath, 'client.conf')).toThrow(
      'the choria security provider needs a client JWT file (plugin.security.choria.token_file) in client.conf',
    );
  });

  it('signs the NATS nonce as unpadded base64url', () => {
    const creds = loadChoriaCredentials(writeTemp('n.jwt', fakeJwt({ callerid: 'c' })), seedPath, '<test>');
    const sig = signNatsNonce(creds.privateKey, 'nonce-from-INFO');
    expect(sig).toMatch(/^[A-Za-z0-9_-]{86}$/);
    expect(verify(null, Buffer.from('nonce-from-INFO'), ed25519Public(publicHex), Buffer.from(sig, 'base64url'))).toBe(
      true,
    );
  });

  it('ChoriaSigner signs the request bytes with the seed and sends the JWT as caller', () => {
    const token = fakeJwt({ callerid: 'provisioner_signer', public_key: publicHex });
    const s = ChoriaSigner.fromFiles(writeTemp('s.jwt', `${token}\n\n`), seedPath);
    expect(s.credential).toBe(token);
    expect(s.callerId).toBe('provisioner_signer');
    const data = Buffer.from('{"protocol":"io.choria.protocol.v2.request"}');
    expect(verify(null, data, ed25519Public(publicHex), Buffer.from(s.sign(data), 'base64'))).toBe(true);
  });
});

describe('selectProtocol and createSigner', () => {
  it('choria selects v2, every other provider v1', () => {
    expect(selectProtocol(choriaSettingsWith({ securityProvider: 'choria', protocolSecure: true }))).toMatchObject({
      version: 'v2',
      secure: true,
    });
    expect(selectProtocol(choriaSettingsWith({ securityProvider: 'file' }))).toMatchObject({
      version: 'v1',
      secure: false,
    });
    expect(selectProtocol(choriaSettingsWith({ securityProvider: 'puppet', protocolSecure: true })).reason).toMatch(
      /"puppet" .* selects protocol v1$/,
    );
    expect(selectProtocol(choriaSettingsWith({ securityProvider: 'file', protocolSecure: false })).reason).toMatch(
      /insecure/,
    );
  });

  it('creates the signer each configuration needs', () => {
    expect(createSigner(choriaSettingsWith({ protocolSecure: false }))).toMatchObject({
      kind: 'insecure',
      protocol: 'v1',
      callerId: 'choria=provisioner.example.net',
    });
    expect(
      createSigner(
        choriaSettingsWith({
          protocolSecure: true,
          certificateFile: certPath,
          keyFile: keyPath,
          certname: 'rip.mcollective',
        }),
      ),
    ).toMatchObject({
      kind: 'file',
      callerId: 'choria=rip.mcollective',
    });
    expect(() => createSigner(choriaSettingsWith({ protocolSecure: true }))).toThrow(
      /needs a certificate and a private key file in <test>/,
    );
    const jwtFile = writeTemp('sel.jwt', fakeJwt({ callerid: 'provisioner_signer', public_key: publicHex }));
    const v2 = choriaSettingsWith({
      securityProvider: 'choria',
      protocolSecure: true,
      tokenFile: jwtFile,
      seedFile: seedPath,
    });
    expect(createSigner(v2)).toMatchObject({ kind: 'choria', protocol: 'v2', callerId: 'provisioner_signer' });
    expect(createSigner({ ...v2, protocolSecure: false })).toMatchObject({
      kind: 'insecure',
      protocol: 'v2',
      callerId: 'provisioner_signer',
    });
    expect(createSigner(choriaSettingsWith({ certname: '' }), 'v2')).toMatchObject({
      kind: 'insecure',
      protocol: 'v2',
      callerId: 'choria=provisioner.example.net',
    });
    expect(() => createSigner({ ...v2, seedFile: undefined })).toThrow(
      /needs plugin.security.choria.token_file and plugin.security.choria.seed_file/,
    );
  });
});

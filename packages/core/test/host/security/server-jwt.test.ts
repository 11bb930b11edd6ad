import { createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as jose from 'jose';
import { ed25519KeyFromSeed, ed25519PublicHex, ed25519PublicKeyFromRaw } from '../../../src/util/ed25519.js';
import {
  mintServerToken,
  parseServerClaims,
  SigningKeyCache,
  ServerClaimsError,
  type MintServerTokenInput,
} from '../../../src/host/security/server-jwt.js';
import { ksuidBytes, ksuidTimestamp } from '../../../src/util/ids.js';
import { readVector, readVectorJson, vectorPath } from '@choria-provisioner/test-support/vectors';

interface ServerTokenVector {
  jwt: string;
  chain_signature_hex?: string;
  chain_signed_data?: string;
  org_signed_data?: string;
}
interface JwtKat {
  keys: Record<string, string>;
  server_tokens: Record<string, ServerTokenVector>;
  provisioning_tokens: Record<string, string>;
}

const kat = readVectorJson<JwtKat>('tokens', 'jwt-kat.json');
const NODE_PUBLIC = kat.keys['node_public_hex'] ?? '';
const ORG_PUBLIC = kat.keys['org_issuer_public_hex'] ?? '';
const PROVISIONER_PUBLIC = kat.keys['provisioner_signing_public_hex'] ?? '';
const orgKey = ed25519KeyFromSeed(Buffer.from(kat.keys['org_issuer_seed_hex'] ?? '', 'hex'));
const YEAR_MS = 365 * 24 * 3600 * 1000;
const NOW = 1_700_000_000;
const SEED_PATH = vectorPath('tokens', 'ed25519-other.seed');
const RSA_PATH = vectorPath('crypto', 'jwt-signer.pem');

const dir = mkdtempSync(join(tmpdir(), 'server-jwt-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function vector(name: string): ServerTokenVector {
  const v = kat.server_tokens[name];
  if (v === undefined) throw new Error(`missing vector ${name}`);
  return v;
}

function payloadOf(token: string): Record<string, unknown> {
  return JSON.parse(payloadText(token)) as Record<string, unknown>;
}
function payloadText(token: string): string {
  return Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8');
}
function jtiRandom(token: string): Buffer {
  return ksuidBytes(String(payloadOf(token)['jti'])).subarray(4);
}

function verifySignature(token: string, key: KeyObject): boolean {
  const [h = '', p = '', s = ''] = token.split('.');
  const alg = (JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg: string }).alg;
  return verify(alg === 'EdDSA' ? null : 'sha256', Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'));
}

const provisionerKey = ed25519PublicKeyFromRaw(Buffer.from(PROVISIONER_PUBLIC, 'hex'));

function mint(overrides: Partial<MintServerTokenInput>): {
  token: string;
  claims: Record<string, unknown>;
  warnings: string[];
} {
  const warnings: string[] = [];
  const token = mintServerToken({
    identity: 'ginkgo.example.net',
    publicKeyHex: NODE_PUBLIC,
    signingKeyPath: SEED_PATH,
    defaultValidityMs: YEAR_MS,
    configuration: {},
    now: NOW,
    onWarning: (msg) => warnings.push(msg),
    ...overrides,
  });
  return { token, claims: payloadOf(token), warnings };
}

// A verifier for chained server tokens as a broker or server would run it.
function verifyChainedServerToken(token: string, orgPublicHex: string, now: number): Record<string, unknown> {
  const claims = payloadOf(token);
  const iss = String(claims['iss']);
  expect(iss.startsWith('C-')).toBe(true);
  const issuerParts = iss.slice(2).split('.');
  expect(issuerParts).toHaveLength(2);
  const [id = '', pkHex = ''] = issuerParts;
  const tcsParts = String(claims['tcs']).split('.');
  expect(tcsParts).toHaveLength(2);
  const [chainTcs = '', chainSig = ''] = tcsParts;
  const orgPublic = ed25519PublicKeyFromRaw(Buffer.from(orgPublicHex, 'hex'));
  const issuerRaw = Buffer.from(pkHex, 'hex');
  const orgData = `${id}.${issuerRaw.toString('hex')}`;
  expect(
    verify(null, Buffer.from(orgData), orgPublic, Buffer.from(chainTcs, 'hex')),
    'org signed the chain issuer',
  ).toBe(true);
  const issuerPublic = ed25519PublicKeyFromRaw(issuerRaw);
  const chainData = `${String(claims['jti'])}.${chainTcs}`;
  expect(
    verify(null, Buffer.from(chainData), issuerPublic, Buffer.from(chainSig, 'hex')),
    'chain issuer signed the token id',
  ).toBe(true);
  expect(verifySignature(token, issuerPublic), 'JWT signed by the chain issuer').toBe(true);
  expect(ksuidTimestamp(String(claims['jti']))).toBe(claims['iat']);
  expect(typeof claims['issexp']).toBe('number');
  expect(Math.min(Number(claims['exp']), Number(claims['issexp']))).toBeGreaterThan(now);
  return claims;
}

describe('server token known answers', () => {
  it('A_ed25519_plain is reproduced byte for byte', () => {
    const a = vector('A_ed25519_plain');
    const { token } = mint({ configuration: { 'plugin.security.provider': 'choria' }, ksuidRandom: jtiRandom(a.jwt) });
    expect(token).toBe(a.jwt);
    expect(verifySignature(token, provisionerKey)).toBe(true);
  });

  it('B_rs256_permissions is reproduced byte for byte, with Go escaping', () => {
    const b = vector('B_rs256_permissions');
    const serverClaims = parseServerClaims({
      ou: 'acme',
      collectives: ['one', 'two'],
      permissions: { submission: true, streams: true },
      pub_subjects: ['acme.registration.>', 'x&y<z'],
    });
    const { token } = mint({ signingKeyPath: RSA_PATH, serverClaims, ksuidRandom: jtiRandom(b.jwt) });
    expect(token).toBe(b.jwt);
    expect(payloadText(token)).toContain('"pub_subjects":["acme.registration.\\u003e","x\\u0026y\\u003cz"]');
    expect(verifySignature(token, createPublicKey(readVector('crypto', 'jwt-signer-public.pem')))).toBe(true);
  });

  it('C_ed25519_chained is reproduced byte for byte and passes chain verification', () => {
    const c = vector('C_ed25519_chained');
    const ci = vector('C_chain_issuer_token');
    const tokenPath = file('signing.jwt', `${ci.jwt}\n`);
    const { token, claims } = mint({
      configuration: { 'plugin.security.provider': 'choria' },
      signingTokenPath: tokenPath,
      ksuidRandom: jtiRandom(c.jwt),
    });
    expect(token).toBe(c.jwt);
    expect(String(claims['tcs']).split('.')[1]).toBe(c.chain_signature_hex);
    expect(`${String(claims['jti'])}.${String(claims['tcs']).split('.')[0]}`).toBe(c.chain_signed_data);
    const verified = verifyChainedServerToken(token, ORG_PUBLIC, NOW + 100);
    expect(verified).toMatchObject({ issexp: 1_710_000_000, exp: 1_710_000_000, iss: `C-${ci.org_signed_data ?? ''}` });
  });

  it('minted tokens verify with jose too', async () => {
    const ed = mint({}).token;
    const rsa = mint({ signingKeyPath: RSA_PATH }).token;
    const opts = { algorithms: ['EdDSA', 'RS256'], currentDate: new Date((NOW + 10) * 1000) };
    await expect(jose.jwtVerify(ed, provisionerKey, opts)).resolves.toBeDefined();
    await expect(
      jose.jwtVerify(rsa, createPublicKey(readVector('crypto', 'jwt-signer-public.pem')), opts),
    ).resolves.toBeDefined();
  });
});

describe('server token scenarios', () => {
  const expectDefaultValidity = (claims: Record<string, unknown>): void => {
    expect(Number(claims['exp']) - Number(claims['iat'])).toBe(YEAR_MS / 1000);
  };

  it('configuration.collectives "one,two" without server_claims', () => {
    const { token, claims } = mint({ configuration: { collectives: 'one,two' } });
    expect(claims).toMatchObject({
      collectives: ['one', 'two'],
      ou: 'choria',
      iss: 'Choria Provisioner',
      purpose: 'choria_server',
    });
    expect(claims).not.toHaveProperty('permissions');
    expect(claims).not.toHaveProperty('pub_subjects');
    expect(claims).not.toHaveProperty('tcs');
    expect(claims).not.toHaveProperty('issexp');
    expect(claims['public_key']).toBe(NODE_PUBLIC);
    expect(claims['nbf']).toBe(NOW);
    expect(claims['iat']).toBe(NOW);
    expect(ksuidTimestamp(String(claims['jti']))).toBe(NOW);
    expectDefaultValidity(claims);
    expect(verifySignature(token, provisionerKey)).toBe(true);
  });

  it.each([
    [{ 'plugin.security.provider': 'choria' }, null, ['choria']],
    [{ 'plugin.security.provider': 'Choria' }, null, ['mcollective']],
    [{}, null, ['mcollective']],
    [{ 'plugin.security.provider': 'choria', collectives: 'a' }, null, ['a']],
    [{ collectives: 'y' }, { collectives: ['x'] }, ['x']],
    [{ collectives: 'c' }, { collectives: [] }, ['c']],
    [{}, { collectives: [] }, ['mcollective']],
    [{ collectives: 'a, b' }, null, ['a', ' b']],
    [{ collectives: '' }, null, ['']],
  ])('configuration %j + server_claims %j -> collectives %j', (configuration, serverClaims, collectives) => {
    const { claims } = mint({ configuration, serverClaims: parseServerClaims(serverClaims) });
    expect(claims['collectives']).toEqual(collectives);
  });

  it('server_claims.ou sets the organisation', () => {
    expect(mint({ serverClaims: { ou: 'acme' } }).claims['ou']).toBe('acme');
    expect(mint({ serverClaims: { ou: '' } }).claims['ou']).toBe('choria');
  });

  it('server_claims.exp is an absolute time', () => {
    const exact = mint({ serverClaims: { exp: NOW + 7200 } });
    expect(Number(exact.claims['exp']) - Number(exact.claims['iat'])).toBe(7200);
    expect(exact.warnings).toEqual([]);
    const fractional = mint({ now: NOW + 0.5, serverClaims: { exp: NOW + 7200 } });
    expect(Number(fractional.claims['exp']) - Number(fractional.claims['iat'])).toBe(7199);
  });

  it.each([
    ['an hour or less away', NOW + 1800],
    ['exactly one hour away', NOW + 3600],
    ['a relative number of seconds (a 1974 date)', 157_680_000],
  ])('server_claims.exp %s falls back to the default with a warning', (_what, exp) => {
    const { claims, warnings } = mint({ serverClaims: { exp } });
    expectDefaultValidity(claims);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^Server validity .* is too short, setting to default 8760h0m0s$/);
  });

  it('uses a configured default validity below one hour as is', () => {
    const { claims, warnings } = mint({ defaultValidityMs: 600_000 });
    expect(Number(claims['exp']) - Number(claims['iat'])).toBe(600);
    expect(warnings[0]).toBe('Server validity 10m0s is too short, setting to default 10m0s');
  });

  it('copies only the true known permission flags, in Go order', () => {
    const serverClaims = parseServerClaims({
      permissions: { streams: true, submission: true, bogus: true, governor: false },
    });
    const { token, claims } = mint({ serverClaims });
    expect(claims['permissions']).toEqual({ submission: true, streams: true });
    expect(payloadText(token)).toContain('"permissions":{"submission":true,"streams":true},"ou"');
    expect(mint({ serverClaims: parseServerClaims({ permissions: {} }) }).claims['permissions']).toEqual({});
  });

  it('copies pub_subjects with Go escaping', () => {
    const { token, claims } = mint({ serverClaims: { pub_subjects: ['acme.registration.>'] } });
    expect(claims['pub_subjects']).toEqual(['acme.registration.>']);
    expect(payloadText(token)).toContain('"pub_subjects":["acme.registration.\\u003e"]');
  });

  it('ignores other server_claims fields', () => {
    const { claims } = mint({
      serverClaims: parseServerClaims({ identity: 'evil', iss: 'me', public_key: 'aa', purpose: 'x', jti: 'y' }),
    });
    expect(claims).toMatchObject({
      identity: 'ginkgo.example.net',
      iss: 'Choria Provisioner',
      public_key: NODE_PUBLIC,
      purpose: 'choria_server',
    });
    expect(claims['jti']).not.toBe('y');
  });

  it('chain issuer with an earlier expiry caps exp and sets iss, issexp and tcs', () => {
    const ci = vector('C_chain_issuer_token');
    const { claims } = mint({ signingTokenPath: file('ci.jwt', ci.jwt) });
    expect(claims).toMatchObject({ issexp: 1_710_000_000, exp: 1_710_000_000, iss: `C-${ci.org_signed_data ?? ''}` });
    verifyChainedServerToken(
      mintServerToken({ ...baseInput(), signingTokenPath: file('ci2.jwt', ci.jwt) }),
      ORG_PUBLIC,
      NOW,
    );
  });

  it('keeps its own exp when the chain issuer lives longer', () => {
    const ci = makeClientToken({ exp: NOW + (10 * YEAR_MS) / 1000 });
    const { token, claims } = mint({ signingTokenPath: file('long.jwt', ci) });
    expect(Number(claims['exp']) - NOW).toBe(YEAR_MS / 1000);
    expect(claims['issexp']).toBe(NOW + (10 * YEAR_MS) / 1000);
    verifyChainedServerToken(token, ORG_PUBLIC, NOW);
  });
});

function baseInput(): MintServerTokenInput {
  return {
    identity: 'ginkgo.example.net',
    publicKeyHex: NODE_PUBLIC,
    signingKeyPath: SEED_PATH,
    defaultValidityMs: YEAR_MS,
    configuration: {},
    now: NOW,
  };
}

function orgSign(data: string): Buffer {
  return sign(null, Buffer.from(data), orgKey);
}

function unsignedToken(payload: Record<string, unknown>): string {
  const head = Buffer.from('{"alg":"EdDSA","typ":"JWT"}').toString('base64url');
  return `${head}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.c2ln`;
}

// A chain-issuer client token for the provisioner's key, issued by the org issuer.
function makeClientToken(overrides: Record<string, unknown>, jti = '2YBDIdSUAvbofLqAYKGt5Yt9FC7'): string {
  const payload = {
    callerid: 'provisioner_signer',
    purpose: 'choria_client_id',
    tcs: orgSign(`${jti}.${PROVISIONER_PUBLIC}`).toString('hex'),
    public_key: PROVISIONER_PUBLIC,
    iss: `I-${ORG_PUBLIC}`,
    exp: NOW + 1000,
    jti,
    ...overrides,
  };
  const head = Buffer.from('{"alg":"EdDSA","typ":"JWT"}').toString('base64url');
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${head}.${body}.${orgSign(`${head}.${body}`).toString('base64url')}`;
}

describe('preconditions and errors', () => {
  it('checks the preconditions in upstream order', () => {
    expect(() =>
      mintServerToken({ ...baseInput(), publicKeyHex: '', signingKeyPath: '', defaultValidityMs: 0 }),
    ).toThrow('no ed25519 public key set');
    expect(() => mintServerToken({ ...baseInput(), signingKeyPath: '', defaultValidityMs: 0 })).toThrow(
      'no jwt signing key configured using jwt_signing_key',
    );
    expect(() => mintServerToken({ ...baseInput(), defaultValidityMs: 0 })).toThrow('no default validity configured');
    expect(() => mintServerToken({ ...baseInput(), defaultValidityMs: -1000 })).toThrow(/must be positive/);
  });

  it('rejects a non-hex node public key and an empty identity', () => {
    expect(() => mintServerToken({ ...baseInput(), publicKeyHex: 'xyz' })).toThrow(
      "encoding/hex: invalid byte: U+0078 'x'",
    );
    expect(() => mintServerToken({ ...baseInput(), identity: '' })).toThrow('identity is required');
  });

  it('re-encodes the node public key as lowercase hex', () => {
    expect(mint({ publicKeyHex: NODE_PUBLIC.toUpperCase() }).claims['public_key']).toBe(NODE_PUBLIC);
  });

  it('reports signing key problems', () => {
    expect(() => mintServerToken({ ...baseInput(), signingKeyPath: join(dir, 'missing') })).toThrow(
      /^could not read signing key: /,
    );
    const bad = file('bad.key', 'not a key');
    expect(() => mintServerToken({ ...baseInput(), signingKeyPath: bad })).toThrow(`unsupported key in ${bad}`);
  });

  it('reports chain issuer problems', () => {
    const ci = vector('C_chain_issuer_token').jwt;
    const run = (tokenText: string, signingKeyPath = SEED_PATH): string =>
      mintServerToken({ ...baseInput(), signingKeyPath, signingTokenPath: file('chain.jwt', tokenText) });

    expect(() => mintServerToken({ ...baseInput(), signingTokenPath: join(dir, 'none.jwt') })).toThrow(
      /^could not read jwt_signing_token: /,
    );
    expect(() => run(ci, RSA_PATH)).toThrow("encoding/hex: invalid byte: U+002D '-'");
    const seedWithNewline = file('nl.seed', `${readVector('tokens', 'ed25519-other.seed')}\n`);
    expect(() => run(ci, seedWithNewline)).toThrow('encoding/hex: invalid byte: U+000A');
    expect(() => run(kat.provisioning_tokens['ed25519_valid'] ?? '')).toThrow('not a client token');
    expect(() => run('garbage')).toThrow(/^could not parse jwt_signing_token: token is malformed/);
    const client = { purpose: 'choria_client_id', tcs: 'ab', jti: 'id', public_key: 'pk', exp: NOW + 10 };
    expect(() => run(unsignedToken({ ...client, tcs: '' }))).toThrow(
      'no Trust Chain Signature claim in JWT Signing Token',
    );
    expect(() => run(unsignedToken({ ...client, jti: undefined }))).toThrow('id not set');
    expect(() => run(unsignedToken({ ...client, public_key: '' }))).toThrow('public key not set');
    expect(() => run(unsignedToken({ ...client, exp: undefined }))).toThrow('issuer has no expiry');
    expect(() => run(unsignedToken({ ...client, jti: 'a.b' }))).toThrow('invalid issuer data');
    expect(() => run(unsignedToken({ ...client, callerid: 5 }))).toThrow('ClientIDClaims.callerid');
  });
});

describe('key rotation', () => {
  it('re-reads jwt_signing_key on every call', () => {
    const keyPath = join(dir, 'rotating.seed');
    copyFileSync(vectorPath('tokens', 'ed25519-other.seed'), keyPath);
    const first = mintServerToken({ ...baseInput(), signingKeyPath: keyPath });
    expect(verifySignature(first, provisionerKey)).toBe(true);

    copyFileSync(vectorPath('tokens', 'ed25519-signer.seed'), keyPath);
    const second = mintServerToken({ ...baseInput(), signingKeyPath: keyPath });
    expect(verifySignature(second, provisionerKey)).toBe(false);
    expect(verifySignature(second, ed25519PublicKeyFromRaw(Buffer.from(ORG_PUBLIC, 'hex')))).toBe(true);

    copyFileSync(RSA_PATH, keyPath);
    const third = mintServerToken({ ...baseInput(), signingKeyPath: keyPath });
    expect(verifySignature(third, createPublicKey(readVector('crypto', 'jwt-signer-public.pem')))).toBe(true);
  });

  it('re-reads jwt_signing_token on every call', () => {
    const tokenPath = join(dir, 'rotating.jwt');
    writeFileSync(tokenPath, vector('C_chain_issuer_token').jwt);
    const first = payloadOf(mintServerToken({ ...baseInput(), signingTokenPath: tokenPath }));
    expect(first['issexp']).toBe(1_710_000_000);

    writeFileSync(tokenPath, makeClientToken({ exp: 1_720_000_000 }, '2YBDIdSUAvbofLqAYKGt5Yt9FC8'));
    const secondToken = mintServerToken({ ...baseInput(), signingTokenPath: tokenPath });
    const second = verifyChainedServerToken(secondToken, ORG_PUBLIC, NOW);
    expect(second['issexp']).toBe(1_720_000_000);
    expect(second['iss']).toBe(`C-2YBDIdSUAvbofLqAYKGt5Yt9FC8.${PROVISIONER_PUBLIC}`);
  });

  it('signs with the seed key matching the chain issuer public key', () => {
    expect(
      ed25519PublicHex(ed25519KeyFromSeed(Buffer.from(kat.keys['provisioner_signing_seed_hex'] ?? '', 'hex'))),
    ).toBe(PROVISIONER_PUBLIC);
  });
});

describe('parseServerClaims', () => {
  it('returns null for absent claims', () => {
    expect(parseServerClaims(null)).toBeNull();
    expect(parseServerClaims(undefined)).toBeNull();
  });

  it('decodes the used fields, drops unknown keys and matches keys case-insensitively', () => {
    expect(
      parseServerClaims({
        OU: 'acme',
        exp: '1700007200',
        collectives: ['a', null],
        permissions: { Streams: true, x: 1 },
        other: 1,
        ou2: 'x',
      }),
    ).toEqual({ ou: 'acme', exp: 1_700_007_200, collectives: ['a', ''], permissions: { streams: true } });
    expect(parseServerClaims({ aud: 'x', pub_subjects: null })).toEqual({ aud: ['x'] });
  });

  it.each([
    [{ collectives: 'a,b' }, 'ServerClaims.collectives of type []string'],
    [{ collectives: [1] }, 'cannot unmarshal number into Go struct field ServerClaims.collectives of type string'],
    [{ permissions: { streams: 'true' } }, 'ServerPermissions.streams of type bool'],
    [{ permissions: true }, 'ServerClaims.permissions of type tokens.ServerPermissions'],
    [{ exp: 'tomorrow' }, 'could not parse NumericData'],
    [{ ou: 5 }, 'ServerClaims.ou of type string'],
    [{ identity: [] }, 'ServerClaims.identity of type string'],
    ['claims', 'cannot unmarshal string into Go value of type ServerClaims'],
    [[1], 'cannot unmarshal array into Go value of type ServerClaims'],
  ])('rejects %j', (value, message) => {
    expect(() => parseServerClaims(value)).toThrow(ServerClaimsError);
    expect(() => parseServerClaims(value)).toThrow(`invalid server_claims: `);
    expect(() => parseServerClaims(value)).toThrow(message);
  });
});

describe('SigningKeyCache', () => {
  const signerOf = (token: string): string => {
    const [head, payload] = token.split('.');
    const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString()) as { iss: string };
    expect(JSON.parse(Buffer.from(head ?? '', 'base64url').toString())).toMatchObject({ alg: 'EdDSA' });
    return claims.iss;
  };
  const verifies = (token: string, publicKey: KeyObject): boolean => {
    const [head, payload, signature] = token.split('.');
    return verify(null, Buffer.from(`${head}.${payload}`), publicKey, Buffer.from(signature ?? '', 'base64url'));
  };

  it('parses a signing key once while the file is unchanged, and again after it was replaced', () => {
    const keyPath = join(dir, 'rotating.seed');
    copyFileSync(SEED_PATH, keyPath);
    const keys = new SigningKeyCache();
    const first = keys.signingKey(Buffer.from(readVector('tokens', 'ed25519-other.seed')), keyPath, false);
    expect(keys.signingKey(Buffer.from(readVector('tokens', 'ed25519-other.seed')), keyPath, false)).toBe(first);
    // the same bytes read as a chain signer's seed are a different use: parsed for it
    expect(keys.signingKey(Buffer.from(readVector('tokens', 'ed25519-other.seed')), keyPath, true)).not.toBe(first);

    // tokens minted through one cache follow a replaced key file at once
    const minted = mintServerToken({ ...baseInput(), signingKeyPath: keyPath, keys });
    expect(signerOf(minted)).toBe('Choria Provisioner');
    expect(
      verifies(
        minted,
        createPublicKey(ed25519KeyFromSeed(Buffer.from(readVector('tokens', 'ed25519-other.seed'), 'hex'))),
      ),
    ).toBe(true);
    copyFileSync(vectorPath('tokens', 'ed25519-signer.seed'), keyPath);
    const rotated = mintServerToken({ ...baseInput(), signingKeyPath: keyPath, keys });
    expect(
      verifies(
        rotated,
        createPublicKey(ed25519KeyFromSeed(Buffer.from(readVector('tokens', 'ed25519-signer.seed'), 'hex'))),
      ),
    ).toBe(true);
    expect(
      verifies(
        rotated,
        createPublicKey(ed25519KeyFromSeed(Buffer.from(readVector('tokens', 'ed25519-other.seed'), 'hex'))),
      ),
    ).toBe(false);
  });
});

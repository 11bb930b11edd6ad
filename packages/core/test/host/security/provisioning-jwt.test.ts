import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as jose from 'jose';
import { ed25519KeyFromSeed } from '../../../src/util/ed25519.js';
import { loadVerificationKey } from '../../../src/host/security/keys.js';
import {
  claimsForHelper,
  ProvisioningTokenError,
  verifyProvisioningToken,
  verifyProvisioningTokenWithKey,
  VerifiedTokens,
} from '../../../src/host/security/provisioning-jwt.js';
import { VerificationKeyCache } from '../../../src/host/host.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readVector, readVectorJson, vectorPath } from '@choria-provisioner/test-support/vectors';

interface Expectation {
  name: string;
  verify_with: string;
  now: number;
  expect: string;
  claims_after_parse?: Record<string, unknown>;
}
interface UpstreamExpectation {
  file: string;
  verify_with_file: string;
  expect: string;
}
interface JwtKat {
  keys: Record<string, string>;
  provisioning_tokens: Record<string, string>;
  provisioning_token_expectations: Expectation[];
  upstream_token_expectations: UpstreamExpectation[];
}

const kat = readVectorJson<JwtKat>('tokens', 'jwt-kat.json');
const ORG_PUBLIC = kat.keys['org_issuer_public_hex'] ?? '';
const orgKey = ed25519KeyFromSeed(Buffer.from(kat.keys['org_issuer_seed_hex'] ?? '', 'hex'));
const NOW = 1_700_000_100;
const PREFIX = 'could not parse provisioner token: ';

function settingFor(verifyWith: string): string {
  if (verifyWith.startsWith('jwt-signer-public.pem')) return vectorPath('crypto', 'jwt-signer-public.pem');
  const hex = verifyWith.split(' ')[0] ?? '';
  expect(hex).toMatch(/^[0-9a-f]{64}$/);
  return hex;
}

function payloadText(token: string): string {
  return Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8');
}

// Full upstream texts for the error cases of provisioning_token_expectations, by index.
const FULL_ERRORS: Record<number, string> = {
  1: `${PREFIX}token has invalid claims: token is expired`,
  2: `${PREFIX}token has invalid claims: token is not valid yet`,
  3: `${PREFIX}token is unverifiable: error while executing keyfunc: ed25519 public key required`,
  7: `${PREFIX}token is unverifiable: error while executing keyfunc: rsa public key required`,
  8: `${PREFIX}token signature is invalid: ed25519: verification error`,
  11: 'not a provisioning token',
  14: 'token is expired',
  17: 'token is expired',
  18: 'token is expired',
  19: `${PREFIX}token is malformed: could not JSON decode claim: json: cannot unmarshal string into Go struct field ProvisioningClaims.chs of type bool`,
  20: `${PREFIX}token signature is invalid: signing method HS256 is invalid`,
  21: `${PREFIX}token signature is invalid: signing method none is invalid`,
};

function errorOf(run: () => unknown): Error {
  let caught: unknown;
  try {
    run();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(Error);
  return caught as Error;
}

// An independent signer for ad-hoc tokens (node:crypto directly).
function makeToken(payload: unknown, alg: string, key: KeyObject | null): string {
  const head = Buffer.from(JSON.stringify({ alg, typ: 'JWT' })).toString('base64url');
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  const input = `${head}.${body}`;
  if (key === null) return `${input}.`;
  const hash = alg === 'EdDSA' ? null : `sha${alg.slice(2)}`;
  return `${input}.${sign(hash, Buffer.from(input), key).toString('base64url')}`;
}

const base = {
  cht: 's3cret',
  chs: true,
  chpd: true,
  purpose: 'choria_provisioning',
  iss: 'test',
  nbf: 1_700_000_000,
  exp: 1_700_003_600,
};

describe('provisioning_token_expectations', () => {
  it('covers all 22 cases', () => {
    expect(kat.provisioning_token_expectations).toHaveLength(22);
  });

  it.each(kat.provisioning_token_expectations.map((c, i) => [i, c] as const))('case %i: %o', (index, c) => {
    const token = kat.provisioning_tokens[c.name];
    expect(token).toBeDefined();
    const run = (): ReturnType<typeof verifyProvisioningToken> =>
      verifyProvisioningToken(token ?? '', settingFor(c.verify_with), { now: c.now });

    if (c.expect.startsWith('valid')) {
      const claims = run();
      expect(claims.cht).toBe('s3cret');
      for (const [claim, value] of Object.entries(c.claims_after_parse ?? {})) {
        expect(claims[claim as keyof typeof claims]).toEqual(value);
      }
      return;
    }

    const err = errorOf(run);
    expect(err).toBeInstanceOf(ProvisioningTokenError);
    const phrase = c.expect.replace(/^error: /, '').replace(/ \(.*\)$/, '');
    if (!phrase.startsWith('claim decoding fails')) expect(err.message).toContain(phrase);
    expect(err.message).toBe(FULL_ERRORS[index]);
  });

  it('hands the helper Go-shaped claims: same keys, order and omissions as the Go-encoded payload', () => {
    for (const name of [
      'ed25519_valid',
      'rs256_valid',
      'ed25519_sub_only',
      'ed25519_purpose_only',
      'ed25519_chain_issexp',
      'ed25519_no_exp',
    ]) {
      const token = kat.provisioning_tokens[name] ?? '';
      const setting = name.startsWith('rs') ? vectorPath('crypto', 'jwt-signer-public.pem') : ORG_PUBLIC;
      const claims = verifyProvisioningToken(token, setting, { now: NOW });
      expect(JSON.stringify(claimsForHelper(claims)), name).toBe(payloadText(token));
    }
  });

  it('adds the default ou for the helper when the token has none', () => {
    const token = kat.provisioning_tokens['ed25519_no_ou'] ?? '';
    const helper = claimsForHelper(verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW }));
    expect(Object.keys(helper)).toEqual([
      'cht',
      'chs',
      'chu',
      'chpd',
      'extensions',
      'ou',
      'purpose',
      'iss',
      'sub',
      'exp',
      'nbf',
      'iat',
      'jti',
    ]);
    expect(helper['ou']).toBe('choria');
    expect(helper['extensions']).toBeNull();
  });

  it('agrees with jose on the valid EdDSA and RSA vectors', async () => {
    const rsa = loadVerificationKey(vectorPath('crypto', 'jwt-signer-public.pem')).key;
    const ed = loadVerificationKey(ORG_PUBLIC).key;
    for (const [name, key] of [
      ['ed25519_valid', ed],
      ['rs256_valid', rsa],
      ['rs384_valid', rsa],
      ['rs512_valid', rsa],
    ] as const) {
      const token = kat.provisioning_tokens[name] ?? '';
      const { payload } = await jose.jwtVerify(token, key, {
        algorithms: ['RS256', 'RS384', 'RS512', 'EdDSA'],
        currentDate: new Date(NOW * 1000),
      });
      const ours = verifyProvisioningToken(
        token,
        name.startsWith('rs') ? vectorPath('crypto', 'jwt-signer-public.pem') : ORG_PUBLIC,
        { now: NOW },
      );
      expect(ours.jti).toBe(payload.jti);
      expect(ours.exp).toBe(payload.exp);
    }
  });
});

describe('upstream_token_expectations', () => {
  const cases = kat.upstream_token_expectations;
  it('covers all 8 cases', () => {
    expect(cases).toHaveLength(8);
  });

  it.each(cases)('$file against $verify_with_file: $expect', (c) => {
    const token = readVector('tokens', c.file);
    const run = (): ReturnType<typeof verifyProvisioningToken> =>
      verifyProvisioningToken(token, vectorPath('tokens', c.verify_with_file), { now: 1_800_000_000 });
    if (c.expect.startsWith('valid')) {
      const claims = run();
      expect(claims.cht.length).toBeGreaterThan(0);
      expect(claims.ou).toBe('choria');
      return;
    }
    const phrase = c.expect.replace(/^error: /, '');
    expect(() => run()).toThrow(`${PREFIX}token signature is invalid: `);
    expect(() => run()).toThrow(phrase);
  });

  it('verifies the upstream EdDSA token with its trailing newline and reads its claims', () => {
    const token = readVector('tokens', 'ed25519-good-provisioning.jwt');
    expect(token.endsWith('\n')).toBe(true);
    const claims = verifyProvisioningToken(token, vectorPath('tokens', 'ed25519-signer.public'), {
      now: 1_900_000_000,
    });
    expect(claims).toMatchObject({
      cht: 'x',
      chs: true,
      chu: 'nats://example:4222',
      chpd: true,
      chrd: ',',
      iss: 'ginkgo',
      exp: 1_971_430_977,
    });
    expect(() =>
      verifyProvisioningToken(token, vectorPath('tokens', 'ed25519-signer.public'), { now: 1_971_430_977 }),
    ).toThrow('token is expired');
  });

  it('reads chs from the broker tokens', () => {
    const cert = vectorPath('tokens', 'broker-rip.mcollective-cert.pem');
    expect(verifyProvisioningToken(readVector('tokens', 'broker-secure.jwt'), cert).chs).toBe(true);
    expect(verifyProvisioningToken(readVector('tokens', 'broker-insecure.jwt'), cert).chs).toBe(false);
  });
});

describe('verifyProvisioningToken edge cases', () => {
  it('requires a token and a configured key', () => {
    expect(() => verifyProvisioningToken('', ORG_PUBLIC)).toThrow('no JWT received');
    expect(() => verifyProvisioningToken(' \n', ORG_PUBLIC)).toThrow('no JWT received');
    const err = errorOf(() => verifyProvisioningToken('a.b.c', ''));
    expect(err.message).toBe('no JWT verification certificate configured, cannot validate JWT');
    expect(err).not.toBeInstanceOf(ProvisioningTokenError);
  });

  it('rejects malformed compact forms', () => {
    const valid = kat.provisioning_tokens['ed25519_valid'] ?? '';
    expect(() => verifyProvisioningToken('a.b', ORG_PUBLIC, { now: NOW })).toThrow(
      `${PREFIX}token is malformed: token contains an invalid number of segments`,
    );
    expect(() => verifyProvisioningToken(`${valid}==`, ORG_PUBLIC, { now: NOW })).toThrow(
      `${PREFIX}token is malformed: could not base64 decode signature`,
    );
    expect(() => verifyProvisioningToken(`e30.${valid.split('.')[1] ?? ''}.x`, ORG_PUBLIC, { now: NOW })).toThrow(
      `${PREFIX}token is unverifiable: signing method (alg) is unspecified`,
    );
    const unknownAlg = makeToken(base, 'XX999', null);
    expect(() => verifyProvisioningToken(unknownAlg, ORG_PUBLIC, { now: NOW })).toThrow(
      'signing method (alg) is unavailable',
    );
    const notJson = `${Buffer.from('{"alg":"EdDSA"}').toString('base64url')}.${Buffer.from('{nope').toString('base64url')}.sig`;
    expect(() => verifyProvisioningToken(notJson, ORG_PUBLIC, { now: NOW })).toThrow(
      `${PREFIX}token is malformed: could not JSON decode claim: `,
    );
    // broken claims hold the token and the broker password: the error says where they broke, not what they say
    const brokenClaims = `${Buffer.from('{"alg":"EdDSA"}').toString('base64url')}.${Buffer.from('{"cht":"tok-Secret77","chpwd":"pw-Secret99" BROKEN').toString('base64url')}.sig`;
    expect(() => verifyProvisioningToken(brokenClaims, ORG_PUBLIC, { now: NOW })).toThrow(
      `${PREFIX}token is malformed: could not JSON decode claim: \`,\` or \`}\` expected at position 44`,
    );
    const arrayPayload = makeToken([1], 'EdDSA', orgKey);
    expect(() => verifyProvisioningToken(arrayPayload, ORG_PUBLIC, { now: NOW })).toThrow(
      'json: cannot unmarshal array into Go value of type ProvisioningClaims',
    );
  });

  it('skips CR/LF inside the signature like Go, but signs the header/payload text as received', () => {
    const valid = kat.provisioning_tokens['ed25519_valid'] ?? '';
    const at = valid.lastIndexOf('.') + 10;
    const inSignature = `${valid.slice(0, at)}\r\n${valid.slice(at)}`;
    expect(verifyProvisioningToken(inSignature, ORG_PUBLIC, { now: NOW }).cht).toBe('s3cret');
    const inHeader = `${valid.slice(0, 20)}\n${valid.slice(20)}`;
    expect(() => verifyProvisioningToken(inHeader, ORG_PUBLIC, { now: NOW })).toThrow('token signature is invalid');
  });

  it('decodes claims with Go types: numeric strings, aud forms, null, case-insensitive keys', () => {
    const token = makeToken(
      {
        ...base,
        exp: '1700003600',
        CHT: 'upper',
        chu: null,
        aud: 'one',
        extensions: { b: 1, a: { d: 2, c: 3 } },
        v2: true,
        update: true,
      },
      'EdDSA',
      orgKey,
    );
    const claims = verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW });
    expect(claims).toMatchObject({ cht: 'upper', chu: '', aud: ['one'], exp: 1_700_003_600, v2: true, update: true });
    const helper = claimsForHelper(claims);
    expect(JSON.stringify(helper['extensions'])).toBe('{"a":{"c":3,"d":2},"b":1}');
    expect(helper['aud']).toEqual(['one']);
    expect(Object.keys(helper)).toEqual([
      'cht',
      'chs',
      'chpd',
      'extensions',
      'ou',
      'v2',
      'update',
      'purpose',
      'iss',
      'aud',
      'exp',
      'nbf',
    ]);

    const list = verifyProvisioningToken(makeToken({ ...base, aud: ['a', 'b'] }, 'EdDSA', orgKey), ORG_PUBLIC, {
      now: NOW,
    });
    expect(list.aud).toEqual(['a', 'b']);
  });

  it.each([
    [{ aud: 5 }, 'invalid type for claim'],
    [{ aud: ['a', 1] }, 'invalid type for claim'],
    [{ exp: 'soon' }, 'could not parse NumericData: json: invalid number literal'],
    [{ exp: true }, 'could not parse NumericData: json: cannot unmarshal bool into Go value of type json.Number'],
    [{ extensions: 'x' }, 'Go struct field ProvisioningClaims.extensions of type tokens.MapClaims'],
    [{ ou: 1 }, 'cannot unmarshal number into Go struct field ProvisioningClaims.ou of type string'],
    [{ chpd: 'true' }, 'cannot unmarshal string into Go struct field ProvisioningClaims.chpd of type bool'],
  ])('rejects wrongly typed claims %j', (extra, message) => {
    const token = makeToken({ ...base, ...extra }, 'EdDSA', orgKey);
    expect(() => verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW })).toThrow(
      `${PREFIX}token is malformed: could not JSON decode claim: `,
    );
    expect(() => verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW })).toThrow(message);
  });

  it('checks the type of claims before the algorithm', () => {
    const token = makeToken({ ...base, chs: 'yes' }, 'HS256', null);
    expect(() => verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW })).toThrow('could not JSON decode claim');
  });

  it('reports expiry and not-yet-valid together like golang-jwt', () => {
    const token = makeToken({ ...base, nbf: NOW + 10, exp: NOW - 10 }, 'EdDSA', orgKey);
    expect(() => verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW })).toThrow(
      `${PREFIX}token has invalid claims: token is expired, token is not valid yet`,
    );
  });

  it('does not check iat or cht', () => {
    const token = makeToken({ ...base, iat: NOW + 100_000, cht: 'anything' }, 'EdDSA', orgKey);
    expect(verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW }).cht).toBe('anything');
  });

  it('applies the chain expiry rule with min(issexp, exp)', () => {
    const chained = { ...base, tcs: 'aa.bb', iss: 'C-x.y', issexp: NOW + 100, exp: NOW + 50 };
    const token = makeToken(chained, 'EdDSA', orgKey);
    expect(verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW }).issexp).toBe(NOW + 100);
    const noExp = makeToken({ ...chained, exp: undefined }, 'EdDSA', orgKey);
    expect(verifyProvisioningToken(noExp, ORG_PUBLIC, { now: NOW + 100 }).tcs).toBe('aa.bb');
    expect(() => verifyProvisioningToken(noExp, ORG_PUBLIC, { now: NOW + 101 })).toThrow(/^token is expired$/);
  });

  it('accepts RSA signers of 1024 bits like upstream (jose would refuse them)', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const token = makeToken(base, 'RS256', privateKey);
    const key = { kind: 'rsa', key: publicKey } as const;
    expect(verifyProvisioningTokenWithKey(token, key, { now: NOW }).cht).toBe('s3cret');
    await expect(jose.jwtVerify(token, publicKey, { currentDate: new Date(NOW * 1000) })).rejects.toThrow(/2048/);
  });

  it('verifies with a preloaded key and uses the clock by default', () => {
    const key = loadVerificationKey(ORG_PUBLIC);
    const fresh = makeToken(
      { ...base, nbf: Math.floor(Date.now() / 1000) - 5, exp: Math.floor(Date.now() / 1000) + 60 },
      'EdDSA',
      orgKey,
    );
    expect(verifyProvisioningTokenWithKey(fresh, key).purpose).toBe('choria_provisioning');
    expect(() => verifyProvisioningTokenWithKey(kat.provisioning_tokens['ed25519_valid'] ?? '', key)).toThrow(
      'token is expired',
    );
  });

  it('truncates fractional dates for the helper', () => {
    const token = makeToken({ ...base, exp: NOW + 10.7, nbf: NOW - 0.5 }, 'EdDSA', orgKey);
    const helper = claimsForHelper(verifyProvisioningToken(token, ORG_PUBLIC, { now: NOW }));
    expect(helper['exp']).toBe(NOW + 10);
    expect(helper['nbf']).toBe(NOW - 1);
  });

  it('remembers a verified signature for the same key, but still checks every claim each time', () => {
    const key = loadVerificationKey(ORG_PUBLIC);
    const token = makeToken(base, 'EdDSA', orgKey);
    const verified = new VerifiedTokens();
    expect(verifyProvisioningTokenWithKey(token, key, { now: NOW, verified }).cht).toBe('s3cret');
    expect(verified.has(token)).toBe(true);
    // the remembered token is past its expiry later on: refused all the same
    expect(() => verifyProvisioningTokenWithKey(token, key, { now: base.exp + 1, verified })).toThrow(
      'token is expired',
    );
    // a forged signature is never remembered, and never accepted
    const [h, p] = token.split('.');
    const forged = `${h}.${p}.${Buffer.alloc(64, 1).toString('base64url')}`;
    expect(() => verifyProvisioningTokenWithKey(forged, key, { now: NOW, verified })).toThrow(/signature is invalid/);
    expect(verified.has(forged)).toBe(false);
  });

  it('forgets the oldest token past its bound', () => {
    const verified = new VerifiedTokens(2);
    for (const t of ['a', 'b', 'c']) verified.add(t);
    expect(['a', 'b', 'c'].map((t) => verified.has(t))).toEqual([false, true, true]);
  });

  describe('VerificationKeyCache', () => {
    /** two RSA signers, a key file holding the first one's public key, claims valid for 10 minutes */
    function keyFile(): {
      file: string;
      sign: (which: 0 | 1) => string;
      use: (which: 0 | 1) => void;
      remove: () => void;
    } {
      const dir = mkdtempSync(join(tmpdir(), 'cpts-keycache-'));
      const file = join(dir, 'signer.pem');
      const pairs = [
        generateKeyPairSync('rsa', { modulusLength: 2048 }),
        generateKeyPairSync('rsa', { modulusLength: 2048 }),
      ] as const;
      const claims = { ...base, nbf: Math.floor(Date.now() / 1000) - 5, exp: Math.floor(Date.now() / 1000) + 600 };
      const use = (which: 0 | 1): void =>
        writeFileSync(file, pairs[which].publicKey.export({ type: 'spki', format: 'pem' }));
      use(0);
      return {
        file,
        sign: (which) => makeToken(claims, 'RS256', pairs[which].privateKey),
        use,
        remove: () => rmSync(dir, { recursive: true, force: true }),
      };
    }

    it('refuses a token verified with the old key file once the file holds another key', () => {
      const k = keyFile();
      try {
        const token = k.sign(0);
        const cache = new VerificationKeyCache(0); // read the file every time
        expect(cache.verify(token, k.file).cht).toBe('s3cret');
        expect(cache.verify(token, k.file).cht).toBe('s3cret');
        k.use(1);
        expect(() => cache.verify(token, k.file)).toThrow(/verification error/);
      } finally {
        k.remove();
      }
    });

    it('takes a replaced key file once the last read is older than the reread time', async () => {
      const k = keyFile();
      try {
        const cache = new VerificationKeyCache(200);
        expect(cache.verify(k.sign(0), k.file).cht).toBe('s3cret');
        k.use(1);
        await new Promise((r) => setTimeout(r, 250));
        expect(cache.verify(k.sign(1), k.file).cht).toBe('s3cret');
        expect(() => cache.verify(k.sign(0), k.file)).toThrow(/verification error/);
      } finally {
        k.remove();
      }
    });
  });
});

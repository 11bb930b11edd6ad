// Property-based fuzzing of every parser of untrusted input: lifecycle events, the replies of every
// action (the envelope of both protocol versions, the MCORPC body and each action's data), the
// claims of a provisioning JWT, CSRs, the helper's output, the control API's paths and queries and
// the monitor port's Host header. Each parser either returns a typed value that holds its promises
// (an identity passes the identity rule) or throws its own error class; never anything else (a
// TypeError, a RangeError from a stack overflow), and never a value it should have refused.
//
// `npm test` runs a fixed seed and a few hundred cases a parser; `npm run fuzz` runs many more
// (FUZZ_RUNS, FUZZ_SEED).
import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readVector } from '@choria-provisioner/test-support/vectors';
import { IdentityRefusedError, whyNotIdentity } from '../../src/choria/identity.js';
import {
  LifecycleEventError,
  encodeLifecycleEvent,
  newLifecycleEvent,
  parseLifecycleEvent,
  LIFECYCLE_TYPES,
} from '../../src/choria/lifecycle.js';
import { codecFor } from '../../src/choria/protocol/codec.js';
import { nowNanoseconds } from '../../src/choria/protocol/ids.js';
import { encodeRpcReply, parseRpcReply } from '../../src/choria/protocol/mcorpc.js';
import { ProtocolError } from '../../src/choria/errors.js';
import {
  NodeReplyError,
  parseCsrReply,
  parseEd25519Reply,
  parseInventoryReply,
  parseJwtReply,
} from '../../src/host/node-replies.js';
import { ProvisioningTokenError, verifyProvisioningTokenWithKey } from '../../src/host/security/provisioning-jwt.js';
import { loadVerificationKey } from '../../src/host/security/keys.js';
import { signCompactJwt } from '../../src/host/security/jwt-compact.js';
import { parseCsr } from '../../src/host/security/csr.js';
import { parseHelperReply } from '../../src/host/helper/reply.js';
import { HelperReplyError } from '../../src/host/helper/errors.js';
import { QueryError, parseControlPath, parseNodeQuery } from '../../src/monitor/http.js';
import { hostCheck, hostOfHeader } from '../../src/monitor/host-check.js';

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 300);
const SEED = Number(process.env['FUZZ_SEED'] ?? 20_261_206);
const params = { numRuns: RUNS, seed: SEED };

/** Runs `parse`; its value, or the error it threw when that is one of `allowed`; anything else fails the property. */
function outcome<T>(
  parse: () => T,
  ...allowed: (abstract new (...args: never[]) => Error)[]
): { value: T } | { error: Error } {
  try {
    return { value: parse() };
  } catch (err) {
    if (allowed.some((cls) => err instanceof cls)) return { error: err as Error };
    throw new Error(`threw ${err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err)}`, {
      cause: err,
    });
  }
}

/** Text an attacker would send: any string, identities near the rule's edges, control characters, deep nesting. */
const hostileText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.constantFrom(
    '',
    '*',
    '>',
    'a.*',
    'a b',
    '/./',
    'a..b',
    '.a',
    'a.',
    'x\u001b[2J',
    'bell\u0007',
    'n\nl',
    '\u202e',
    'x'.repeat(4100),
    'x'.repeat(254),
  ),
  fc.stringMatching(/^[A-Za-z0-9_.-]{1,20}$/),
);

/** A JSON value that may nest far deeper than a real one. */
const deepJson = fc.nat({ max: 3000 }).map((depth) => '['.repeat(depth) + '1' + ']'.repeat(depth));

/** Objects shaped like `base` with each field replaced by anything at random, or dropped. */
function mutated(base: Record<string, unknown>): fc.Arbitrary<Record<string, unknown>> {
  const fields = Object.fromEntries(
    Object.keys(base).map((k) => [
      k,
      fc.option(fc.oneof(fc.constant(base[k]), fc.jsonValue(), hostileText), { nil: undefined }),
    ]),
  );
  return fc.record(fields, { requiredKeys: [] });
}

describe('lifecycle events', () => {
  const valid = (identity: string, type: (typeof LIFECYCLE_TYPES)[number], format: 'choria' | 'cloudevents'): string =>
    encodeLifecycleEvent(newLifecycleEvent({ type, identity, component: 'provisioning', version: '0.30.2', format }));

  it('parse to an event whose identity passes the rule, or are refused with their own errors', () => {
    const event = fc.oneof(
      fc
        .tuple(
          hostileText,
          fc.constantFrom(...LIFECYCLE_TYPES),
          fc.constantFrom('choria' as const, 'cloudevents' as const),
        )
        .map(([id, t, f]) => valid(id, t, f)),
      mutated(JSON.parse(valid('n1.example.net', 'startup', 'choria')) as Record<string, unknown>).map((o) =>
        JSON.stringify(o),
      ),
      mutated(JSON.parse(valid('n1.example.net', 'startup', 'cloudevents')) as Record<string, unknown>).map((o) =>
        JSON.stringify(o),
      ),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string({ unit: 'binary', maxLength: 200 }),
      deepJson,
    );
    fc.assert(
      fc.property(event, (text) => {
        const r = outcome(() => parseLifecycleEvent(text), LifecycleEventError, IdentityRefusedError);
        if ('value' in r) expect(whyNotIdentity(r.value.identity)).toBeUndefined();
      }),
      params,
    );
  });
});

describe('replies of every action', () => {
  const bodyOf = fc.oneof(
    fc
      .record({ action: fc.string(), statuscode: fc.integer(), statusmsg: hostileText, data: fc.jsonValue() })
      .map((b) => encodeRpcReply(b)),
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.string({ unit: 'binary', maxLength: 200 }),
    deepJson,
  );

  for (const version of ['v1', 'v2'] as const) {
    it(`protocol ${version}: the envelope decodes to a reply or is refused with a ProtocolError`, () => {
      const codec = codecFor(version);
      // what a sender can encode at all (a v1 reply carries a non-empty message)
      const sendable = bodyOf.filter((b) => b !== '');
      const envelope = fc.oneof(
        fc.tuple(hostileText, sendable).map(
          ([sender, body]) =>
            codec.encodeReply({
              requestId: 'b2f4ab8f1e4b5b57a9d3c6e3f2a1d0c9',
              sender,
              agent: 'choria_provision',
              timeNs: nowNanoseconds(),
              body,
            }).transportJson,
        ),
        fc
          .tuple(hostileText, sendable)
          .map(([sender, body]) => {
            const good = JSON.parse(
              codec.encodeReply({
                requestId: 'b2f4ab8f1e4b5b57a9d3c6e3f2a1d0c9',
                sender,
                agent: 'rpcutil',
                timeNs: nowNanoseconds(),
                body,
              }).transportJson,
            ) as Record<string, unknown>;
            return good;
          })
          .chain((good) => mutated(good))
          .map((o) => JSON.stringify(o)),
        fc.jsonValue().map((v) => JSON.stringify(v)),
        fc.string({ unit: 'binary', maxLength: 300 }),
        deepJson,
      );
      fc.assert(
        fc.property(envelope, (text) => {
          const r = outcome(() => codec.decodeReply(text), ProtocolError);
          if ('value' in r) expect(typeof r.value.sender).toBe('string');
        }),
        params,
      );
    });
  }

  it('the MCORPC body parses to a reply or is refused with a ProtocolError', () => {
    fc.assert(
      fc.property(bodyOf, (text) => void outcome(() => parseRpcReply(text), ProtocolError)),
      params,
    );
  });

  it("each action's data parses to its typed value or is refused with a NodeReplyError", () => {
    const data = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(
        fc.constantFrom(
          'jwt',
          'ecdh_public',
          'public_key',
          'directory',
          'signature',
          'csr',
          'ssldir',
          'version',
          'upgradable',
          'facts',
          'agents',
        ),
        fc.oneof(fc.jsonValue(), hostileText),
      ),
    );
    fc.assert(
      fc.property(data, (d) => {
        for (const parse of [parseJwtReply, parseEd25519Reply, parseCsrReply]) {
          const r = outcome(() => parse(d), NodeReplyError);
          if ('value' in r) for (const v of Object.values(r.value)) expect(typeof v).toBe('string');
        }
        const inv = outcome(() => parseInventoryReply(d), NodeReplyError);
        if ('value' in inv) expect(inv.value.text).toBe(JSON.stringify(d));
      }),
      params,
    );
  });
});

describe('provisioning JWT claims', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const key = loadVerificationKey(raw.toString('hex'));
  const now = 1_800_000_000;
  const claims = {
    purpose: 'choria_provisioning',
    cht: 's3cret',
    chu: 'nats://broker.example.net:4222',
    chs: true,
    ou: 'choria',
    exp: now + 3600,
    iat: now - 10,
    tcs: '',
    extensions: { role: 'web' },
  };
  it('signed claims of any shape are verified to typed claims or refused with a ProvisioningTokenError', () => {
    const payload = fc.oneof(
      mutated(claims).map((c) => JSON.stringify(c)),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      fc.string({ unit: 'binary', maxLength: 200 }),
      deepJson,
    );
    fc.assert(
      fc.property(payload, (json) => {
        const r = outcome(
          () => verifyProvisioningTokenWithKey(signCompactJwt(json, 'EdDSA', privateKey), key, { now }),
          ProvisioningTokenError,
        );
        if ('value' in r) expect(typeof r.value.ou).toBe('string');
      }),
      params,
    );
  });
  it('tokens that are not JWTs at all are refused with a ProvisioningTokenError', () => {
    const token = fc.oneof(
      hostileText,
      fc.array(fc.base64String({ maxLength: 60 }), { minLength: 1, maxLength: 5 }).map((parts) => parts.join('.')),
    );
    fc.assert(
      fc.property(
        token,
        (t) => void outcome(() => verifyProvisioningTokenWithKey(t, key, { now }), ProvisioningTokenError),
      ),
      params,
    );
  });
});

describe('CSRs', () => {
  const real = readVector('crypto', 'csr', 'rip.mcollective-csr.pem');
  const body = real.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  it('parse to names or are refused with a message naming the CSR, whatever the bytes', () => {
    const pem = fc.oneof(
      fc
        .uint8Array({ maxLength: 600 })
        .map(
          (b) =>
            `-----BEGIN CERTIFICATE REQUEST-----\n${Buffer.from(b).toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`,
        ),
      fc
        .tuple(fc.nat({ max: body.length - 1 }), fc.nat({ max: 20 }), fc.base64String({ maxLength: 8 }))
        .map(([at, cut, ins]) => {
          const changed = body.slice(0, at) + ins + body.slice(at + cut);
          return `-----BEGIN CERTIFICATE REQUEST-----\n${changed}\n-----END CERTIFICATE REQUEST-----\n`;
        }),
      hostileText,
    );
    fc.assert(
      fc.property(pem, (text) => {
        const r = outcome(() => parseCsr(text), Error);
        if ('error' in r) {
          expect(r.error).not.toBeInstanceOf(TypeError);
          expect(r.error).not.toBeInstanceOf(RangeError);
          expect(r.error.message).toMatch(/CSR/);
        } else {
          expect(typeof r.value.commonName).toBe('string');
        }
      }),
      params,
    );
  });
});

describe("the helper's output", () => {
  it('parses to a checked reply or is refused with a HelperReplyError', () => {
    const reply = fc.oneof(
      fc.jsonValue().map((v) => JSON.stringify(v)),
      mutated({
        defer: false,
        msg: '',
        certificate: '',
        ca: '',
        configuration: { identity: 'n1' },
        server_claims: {},
        action_policies: {},
        opa_policies: {},
        key: '',
      }).map((o) => JSON.stringify(o)),
      fc
        .record({ configuration: fc.dictionary(hostileText, fc.oneof(fc.jsonValue(), hostileText)) })
        .map((o) => JSON.stringify(o)),
      fc.string({ unit: 'binary', maxLength: 300 }),
      deepJson,
    );
    fc.assert(
      fc.property(reply, (text) => void outcome(() => parseHelperReply(text), HelperReplyError)),
      params,
    );
  });
});

describe('the monitor port', () => {
  it('control paths parse to an action and a node, or to nothing', () => {
    const path = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 80 }).map((s) => `/${s}`),
      fc
        .tuple(fc.string({ unit: 'binary', maxLength: 40 }), fc.constantFrom('release', 'retry', 'frob'))
        .map(([id, a]) => `/nodes/${id}/${a}`),
      fc
        .tuple(fc.string({ maxLength: 40 }), fc.constantFrom('release', 'retry'))
        .map(([id, a]) => `/nodes/${encodeURIComponent(id)}/${a}`),
      fc.constantFrom('/pause', '/resume', '/nodes//retry', '/nodes/%E0%A4%A/retry', '/nodes/%/retry'),
    );
    fc.assert(
      fc.property(path, (p) => {
        const route = outcome(() => parseControlPath(p));
        if ('value' in route && route.value !== undefined)
          expect(['pause', 'resume', 'release', 'retry']).toContain(route.value.action);
      }),
      params,
    );
  });

  it('node queries parse or are refused naming the parameter', () => {
    const query = fc.dictionary(
      fc.constantFrom('sort', 'order', 'site', 'state', 'search', 'offset', 'limit', 'x'),
      fc.string({ unit: 'binary', maxLength: 300 }),
    );
    fc.assert(
      fc.property(query, (q) => {
        const r = outcome(() => parseNodeQuery(new URLSearchParams(q)), QueryError);
        if ('error' in r) expect(r.error.message).toMatch(/^(sort|order|state|search|offset|limit) /);
      }),
      params,
    );
  });

  it('a Host header is known or not, never an error; names it was not told are never known', () => {
    const known = hostCheck({ bindAddress: '0.0.0.0', allowed: ['prov1.example.net'] });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 60 }), fc.domain()), (h) => {
        const host = hostOfHeader(h);
        const ok = known(h);
        if (ok)
          expect(host === 'localhost' || host === 'prov1.example.net' || /^[\d.]+$|:/.test(host ?? '')).toBe(true);
      }),
      params,
    );
  });
});

import { describe, expect, it } from 'vitest';
import { createTestCa, issueCertificate } from '@choria-provisioner/test-support/tls';
import { certificateExpiry, issuedCredentials, renewability, tokenExpiry } from '../../src/host/credentials.js';

const jwt = (claims: Record<string, unknown>): string =>
  ['e30', Buffer.from(JSON.stringify(claims)).toString('base64url'), 'c2ln'].join('.');

describe('what a node was given that expires', () => {
  it("reads a certificate's notAfter", async () => {
    const ca = await createTestCa();
    const before = Date.now();
    const { certPem } = await issueCertificate(ca, {
      commonName: 'n1.example.net',
      usage: 'server',
      validForMs: 240_000,
    });
    const at = certificateExpiry(certPem) ?? NaN;
    // X.509 times have whole seconds
    expect(at).toBeGreaterThanOrEqual(Math.floor((before + 240_000) / 1000) * 1000 - 1000);
    expect(at).toBeLessThanOrEqual(Date.now() + 240_000);
    expect(certificateExpiry('not a certificate')).toBeUndefined();
  });

  it("reads a server JWT's exp", () => {
    expect(tokenExpiry(jwt({ exp: 1_800_000_000 }))).toBe(1_800_000_000_000);
    expect(tokenExpiry(jwt({ sub: 'x' }))).toBeUndefined();
    expect(tokenExpiry('garbage')).toBeUndefined();
  });

  it('takes the earlier of the two, and nothing when nothing expires', () => {
    const given = { certificate: undefined, claims: { chpd: true } };
    expect(issuedCredentials({ ...given, serverJwt: jwt({ exp: 100 }) })).toEqual({
      expiresAt: 100_000,
      renewability: { renewable: true },
    });
    expect(issuedCredentials({ ...given, serverJwt: '' })).toBeUndefined();
  });
});

describe("go-choria's rule for coming back into provisioning after reprovision", () => {
  it('renews a node whose provisioning JWT provisions by default (--default)', () => {
    expect(renewability({ chpd: true })).toEqual({ renewable: true });
  });

  it('never any other, whatever security provider it runs, and says why', () => {
    expect(renewability({ chpd: false })).toMatchObject({
      renewable: false,
      reason: expect.stringContaining('made without --default'),
    });
    expect(renewability(undefined)).toMatchObject({
      renewable: false,
      reason: expect.stringContaining('features.jwt'),
    });
  });
});

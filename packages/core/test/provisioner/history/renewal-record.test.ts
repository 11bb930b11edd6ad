// What a node's history keeps of its credentials and their renewal, and what that means for its
// next attempt.
import { describe, expect, it } from 'vitest';
import { NodeHistory, decodeRecord, encodeRecord } from '../../../src/provisioner/history/index.js';
import type { IssuedCredentials } from '../../../src/host/credentials.js';
import type { Outcome } from '../../../src/host/types.js';

function history(): NodeHistory {
  return new NodeHistory({
    policy: { backoffMs: 10_000, backoffMaxMs: 10_000, quarantineAfter: 0, random: () => 1 - 1e-12 },
    instance: 'prov1.example.net',
    ttlMs: 86_400_000,
  });
}

const issued = (expiresAt: number, reason?: string): IssuedCredentials => ({
  expiresAt,
  renewability: reason === undefined ? { renewable: true } : { renewable: false, reason },
});

function ended(h: NodeHistory, outcome: Outcome, at: number, credentials?: IssuedCredentials): void {
  h.attempted('n1', { outcome, message: 'm', at, durationMs: 1, configured: true, discoveredAt: at, credentials });
}

describe('the credentials in a node record', () => {
  it('a success records what the node was given; a failure or a neutral end keeps it', () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000, 'no --default'));
    expect(h.get('n1')).toMatchObject({ credentialsExpireAt: 500_000, notRenewable: 'no --default' });
    ended(h, 'failed', 2_000);
    ended(h, 'deferred', 3_000);
    expect(h.get('n1')).toMatchObject({ credentialsExpireAt: 500_000, notRenewable: 'no --default' });
    ended(h, 'provisioned', 4_000, issued(900_000));
    expect(h.get('n1')?.credentialsExpireAt).toBe(900_000);
    expect(h.get('n1')?.notRenewable).toBeUndefined();
  });

  it('survive the stored form', () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000, 'no --default'));
    void h.renewalSending('n1', 2_000, 0);
    h.renewalFailed('n1', 3_000, 'refused reprovision: wrong token');
    const r = h.get('n1');
    expect(r).toBeDefined();
    if (r === undefined) return;
    expect(decodeRecord(encodeRecord(r))).toEqual(r);
    expect(r).toMatchObject({
      renewalSentAt: 2_000,
      renewalSentBy: 'prov1.example.net',
      renewalError: 'refused reprovision: wrong token',
    });
  });
});

describe('a renewal in the record', () => {
  it('a node sent back to provisioning is taken at once, whatever held it back, except a quarantine', async () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000));
    await h.sending('n1', 'restart', 1_000, 0);
    ended(h, 'failed', 1_500);
    expect(h.deferral('n1', 2_000, 'discovery')).toBe('backoff');
    await h.renewalSending('n1', 2_000, 0);
    expect(h.deferral('n1', 2_001, 'discovery')).toBeUndefined();
    h.renewalFailed('n1', 2_500, 'not back');
    expect(h.deferral('n1', 2_600, 'discovery')).toBe('backoff');
  });

  it('ends with the next success, and failed renewals are due again once an operator resumes them', async () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000));
    await h.renewalSending('n1', 2_000, 0);
    ended(h, 'provisioned', 3_000, issued(900_000));
    expect(h.get('n1')?.credentialsExpireAt).toBe(900_000);
    expect([h.get('n1')?.renewalSentAt, h.get('n1')?.renewalSentBy]).toEqual([undefined, undefined]);
    await h.renewalSending('n1', 4_000, 0);
    h.renewalFailed('n1', 5_000, 'refused');
    expect(h.renewalFailuresCleared(6_000)).toBe(1);
    expect([h.get('n1')?.renewalSentAt, h.get('n1')?.renewalError]).toEqual([undefined, undefined]);
  });

  it('is not recorded for a node without a record', () => {
    expect(history().renewalSending('unknown', 1, 0)).toBeUndefined();
  });
});

describe('a record whose credentials are still valid', () => {
  it('outlives the history TTL: written again at half of it, until the credentials expire', () => {
    const h = new NodeHistory({
      policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0, random: () => 0.5 },
      instance: 'prov1.example.net',
      ttlMs: 1_000,
    });
    ended(h, 'provisioned', 0, issued(10_000));
    h.attempted('plain', {
      outcome: 'provisioned',
      message: undefined,
      at: 0,
      durationMs: 1,
      configured: true,
      discoveredAt: 0,
    });
    expect(h.expire(499)).toBe(0);
    expect(h.get('n1')?.updatedAt).toBe(0);
    expect(h.expire(600)).toBe(0);
    expect(h.get('n1')?.updatedAt).toBe(600);
    expect(h.expire(1_000)).toBe(1); // the record without credentials goes
    expect(h.get('plain')).toBeUndefined();
    for (let t = 1_000; t <= 9_000; t += 100) h.expire(t);
    expect(h.get('n1')).toBeDefined();
    for (let t = 9_100; t <= 12_000; t += 100) h.expire(t);
    expect(h.get('n1')).toBeUndefined();
  });
});

// What a node's history keeps of its credentials and their renewal, and what that means for its
// next attempt.
import { describe, expect, it } from 'vitest';
import { NodeHistory, decodeRecord, encodeRecord, type NodeRecord } from '../../../src/provisioner/history/index.js';

import type { IssuedCredentials } from '../../../src/host/credentials.js';
import type { Outcome } from '../../../src/host/types.js';
import {
  basisOf,
  renewalCleared,
  renewalFailed,
  renewalFellShort,
  renewalSent,
  renewalWithdrawn,
} from '../../../src/provisioner/renewal/record-changes.js';

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

/** `reprovision` recorded for what n1 holds now. */
function sent(h: NodeHistory, at: number): boolean {
  const r = h.get('n1');
  return r !== undefined && h.change('n1', renewalSent(basisOf(r), at, 'prov1.example.net')).after !== undefined;
}

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
    h.attempted('n2', {
      outcome: 'provisioned',
      message: 'm',
      at: 1_000,
      durationMs: 1,
      configured: true,
      discoveredAt: 1_000,
      credentials: issued(500_000, 'no --default'),
    });
    const stranded = h.get('n2') as NodeRecord;
    expect(decodeRecord(encodeRecord(stranded))).toEqual(stranded);
    expect(stranded).toMatchObject({ notRenewable: 'no --default', generation: 1 });
    ended(h, 'provisioned', 1_000, issued(500_000));
    expect(sent(h, 2_000)).toBe(true);
    h.change('n1', renewalFailed(2_000, 'refused reprovision: wrong token', 3_000));
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

describe('credentials of a configure whose restart another attempt sent', () => {
  it('are recorded with the configure and taken over by the success that restarts it', async () => {
    const h = history();
    await h.sending('n1', 'configure', 1_000, 0, { credentials: issued(500_000) });
    // the attempt that configured it ends without its restart (its lease ran out)
    h.attempted('n1', {
      outcome: 'cancelled',
      message: 'lease',
      at: 1_100,
      durationMs: 1,
      configured: true,
      discoveredAt: 900,
    });
    expect(h.get('n1')).toMatchObject({ configuredAt: 1_000, configuredExpireAt: 500_000 });
    expect(h.get('n1')?.credentialsExpireAt).toBeUndefined();
    // the next attempt only restarts it: the node holds what that configure gave it
    h.attempted('n1', {
      outcome: 'provisioned',
      message: 'restarted',
      at: 2_000,
      durationMs: 1,
      configured: false,
      discoveredAt: 1_900,
    });
    expect(h.get('n1')).toMatchObject({ credentialsExpireAt: 500_000, generation: 1 });
    expect(h.get('n1')?.configuredExpireAt).toBeUndefined();
    expect(decodeRecord(encodeRecord(h.get('n1') as NodeRecord))).toEqual(h.get('n1'));
  });
});

describe('a renewal in the record', () => {
  it('a node sent back to provisioning is taken at once, whatever held it back, except a quarantine', async () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000));
    await h.sending('n1', 'restart', 1_000, 0);
    ended(h, 'failed', 1_500);
    expect(h.deferral('n1', 2_000, 'discovery')).toBe('backoff');
    expect(sent(h, 2_000)).toBe(true);
    expect(h.deferral('n1', 2_001, 'discovery')).toBeUndefined();
    h.change('n1', renewalFailed(2_000, 'not back', 2_500));
    expect(h.deferral('n1', 2_600, 'discovery')).toBe('backoff');
  });

  it('ends with the next success, and failed renewals are due again once an operator resumes them', () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000));
    expect(sent(h, 2_000)).toBe(true);
    ended(h, 'provisioned', 3_000, issued(900_000));
    expect(h.get('n1')).toMatchObject({ credentialsExpireAt: 900_000, generation: 2 });
    expect([h.get('n1')?.renewalSentAt, h.get('n1')?.renewalSentBy]).toEqual([undefined, undefined]);
    expect(sent(h, 4_000)).toBe(true);
    h.change('n1', renewalFailed(4_000, 'refused', 5_000));
    expect(h.change('n1', renewalCleared(6_000)).after).toBeDefined();
    expect([h.get('n1')?.renewalSentAt, h.get('n1')?.renewalError]).toEqual([undefined, undefined]);
  });

  it('is not recorded for a node without a record', () => {
    const h = history();
    expect(h.change('unknown', renewalSent({ generation: 0, expiresAt: 1 }, 1, 'p')).after).toBeUndefined();
    expect(h.get('unknown')).toBeUndefined();
  });
});

describe('renewal changes hold only on the facts they were made for', () => {
  it('reprovision is recorded only for the generation and credentials seen due, and only once', () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000));
    const seen = basisOf(h.get('n1') as NodeRecord);
    ended(h, 'provisioned', 2_000, issued(900_000));
    // a stale view saw the first credentials due: they were renewed meanwhile
    expect(h.change('n1', renewalSent(seen, 3_000, 'p')).after).toBeUndefined();
    expect(sent(h, 3_000)).toBe(true);
    // a second instance deciding on the same facts meets a renewal already in flight
    expect(sent(h, 3_001)).toBe(false);
  });

  it('a failure holds only while the renewal it judged is in flight; a withdrawal only for its own send', () => {
    const h = history();
    ended(h, 'provisioned', 1_000, issued(500_000));
    sent(h, 2_000);
    expect(h.change('n1', renewalWithdrawn(2_000, 'someone-else', 2_100)).after).toBeUndefined();
    ended(h, 'provisioned', 3_000, issued(900_000));
    // provisioned again meanwhile: the time-out judged on the old view is refused
    expect(h.change('n1', renewalFailed(2_000, 'not back', 4_000)).after).toBeUndefined();
    expect(h.get('n1')?.renewalError).toBeUndefined();
    // provisioned again without later credentials: a failure of that generation only
    expect(h.change('n1', renewalFellShort(1, 'no later credentials', 4_000)).after).toBeUndefined();
    expect(h.change('n1', renewalFellShort(2, 'no later credentials', 4_000)).after?.renewalError).toBe(
      'no later credentials',
    );
    sent(h, 5_000);
    expect(h.get('n1')?.renewalSentAt).toBeUndefined(); // failed: not due until resumed
    h.change('n1', renewalCleared(6_000));
    expect(sent(h, 7_000)).toBe(true);
    expect(h.change('n1', renewalWithdrawn(7_000, 'prov1.example.net', 7_100)).after?.renewalSentAt).toBeUndefined();
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

import { describe, expect, it } from 'vitest';
import type { ChoriaClient } from '../../src/choria/client.js';
import { confirmAfterLostReply, linkSettled } from '../../src/host/lost-reply.js';

// Silence from a node means something only when the broker link was steady while it was heard.
describe('linkSettled', () => {
  const at = 100_000;
  const up = (changes: number, upSince: number) => ({ up: true, changes, upSince });

  it('is settled on a link that never dropped, however young the connection', () => {
    expect(linkSettled(up(0, at - 10), up(0, at - 10), 5_000, at)).toBe(true);
  });

  it('is not settled while the servers may still be reconnecting after a broker restart', () => {
    expect(linkSettled(up(2, at - 1_000), up(2, at - 1_000), 5_000, at)).toBe(false);
    expect(linkSettled(up(2, at - 6_000), up(2, at - 6_000), 5_000, at)).toBe(true);
  });

  it('is not settled when the link dropped or changed while the node was asked', () => {
    expect(linkSettled({ up: false, changes: 1, upSince: 0 }, up(2, at - 60_000), 5_000, at)).toBe(false);
    expect(linkSettled(up(0, 0), { up: false, changes: 1, upSince: 0 }, 5_000, at)).toBe(false);
    expect(linkSettled(up(2, 0), up(4, 0), 5_000, at)).toBe(false);
  });
});

// A configure reply lost with the broker: the node still answering is all there is to learn.
describe('confirmAfterLostReply for configure', () => {
  function fleetOfOne(identity: string, reconnectedAgoMs: number): ChoriaClient {
    const client = {
      link: { up: true, changes: 2, upSince: performance.now() - reconnectedAgoMs },
      discover: () => Promise.resolve([identity]),
    };
    return client as unknown as ChoriaClient;
  }
  const request = (client: ChoriaClient, reconnected: boolean) => ({
    client,
    witness: undefined,
    identity: 'n1.example.net',
    action: 'configure' as const,
    sentAt: performance.now(),
    reconnected,
    signal: new AbortController().signal,
    timings: { marginMs: 3_000, probeIntervalMs: 50 },
  });

  it('is unsure at the first answer after a reconnect: waiting out the margin cannot tell more', async () => {
    const started = performance.now();
    expect(await confirmAfterLostReply(request(fleetOfOne('n1.example.net', 100), true))).toBe('unsure');
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('without a reconnect, a node that keeps answering past the margin did not act', async () => {
    const started = performance.now();
    expect(await confirmAfterLostReply(request(fleetOfOne('n1.example.net', 60_000), false))).toBe('not_acted');
    expect(performance.now() - started).toBeGreaterThanOrEqual(2_900);
  });
});

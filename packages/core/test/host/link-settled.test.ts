import { describe, expect, it } from 'vitest';
import { linkSettled } from '../../src/host/lost-reply.js';

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

import { afterEach, describe, expect, it, vi } from 'vitest';
import { REDISCOVERY_DELAYS_MS, RediscoveryAfterReconnect } from '../../src/provisioner/rediscovery.js';

describe('RediscoveryAfterReconnect', () => {
  afterEach(() => vi.useRealTimers());

  it('discovers 5 s and 15 s after the link comes back, counted from the latest reconnect, and never after stop', () => {
    vi.useFakeTimers();
    expect(REDISCOVERY_DELAYS_MS).toEqual([5_000, 15_000]);
    const discover = vi.fn();
    const r = new RediscoveryAfterReconnect(discover);
    r.linkRestored();
    vi.advanceTimersByTime(4_999);
    expect(discover).toHaveBeenCalledTimes(0);
    vi.advanceTimersByTime(1);
    expect(discover).toHaveBeenCalledTimes(1);
    // another reconnect starts the count again
    r.linkRestored();
    vi.advanceTimersByTime(5_000);
    expect(discover).toHaveBeenCalledTimes(2);
    vi.advanceTimersByTime(10_000);
    expect(discover).toHaveBeenCalledTimes(3);
    r.linkRestored();
    r.stop();
    vi.advanceTimersByTime(60_000);
    expect(discover).toHaveBeenCalledTimes(3);
  });
});

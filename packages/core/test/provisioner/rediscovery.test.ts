import { describe, expect, it, vi } from 'vitest';
import {
  rediscoveryDelaysMs,
  RediscoveryAfterLapse,
  RediscoveryAfterReconnect,
} from '../../src/provisioner/rediscovery.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// Real timers on a shorter schedule: fake timers advanced by tens of seconds would also fire
// vitest's own RPC timeouts in the worker.
describe('RediscoveryAfterReconnect', () => {
  it('waits the link fleet-reconnect time and then three times as long after a reconnect', () => {
    expect(rediscoveryDelaysMs(5_000)).toEqual([5_000, 15_000]);
    expect(rediscoveryDelaysMs(200)).toEqual([200, 600]);
  });

  it('discovers at each delay after the link comes back, counted from the latest reconnect, and never after stop', async () => {
    const discover = vi.fn();
    const r = new RediscoveryAfterReconnect(discover, [300, 900]);
    r.linkRestored(5_000);
    await sleep(100);
    expect(discover).toHaveBeenCalledTimes(0);
    await sleep(400);
    expect(discover).toHaveBeenCalledTimes(1);
    // another reconnect starts the count again: the pending 900 ms one is replaced
    r.linkRestored(5_000);
    await sleep(600);
    expect(discover).toHaveBeenCalledTimes(2);
    await sleep(600);
    expect(discover).toHaveBeenCalledTimes(3);
    r.linkRestored(5_000);
    r.stop();
    await sleep(1_000);
    expect(discover).toHaveBeenCalledTimes(3);
  });
});

describe('RediscoveryAfterLapse', () => {
  it('discovers once, when nodes were let go and the right to act holds again', () => {
    const discover = vi.fn();
    let mayAct = false;
    const r = new RediscoveryAfterLapse(discover, () => mayAct);
    // nothing let go: nothing to look for, whatever the lease says
    mayAct = true;
    expect(r.check()).toBe(false);
    mayAct = false;
    r.letGo();
    r.letGo();
    // still out: waits
    expect(r.check()).toBe(false);
    expect(discover).not.toHaveBeenCalled();
    mayAct = true;
    expect(r.check()).toBe(true);
    expect(discover).toHaveBeenCalledTimes(1);
    // once per lapse
    expect(r.check()).toBe(false);
    expect(discover).toHaveBeenCalledTimes(1);
  });
});

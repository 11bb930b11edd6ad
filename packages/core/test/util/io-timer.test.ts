import { describe, expect, it } from 'vitest';
import { sleep } from '@choria-provisioner/test-support/wait';
import { afterPendingIo } from '../../src/util/io-timer.js';

describe('afterPendingIo', () => {
  it('calls back once after its time', async () => {
    let calls = 0;
    afterPendingIo(20, () => calls++);
    await sleep(5);
    expect(calls).toBe(0);
    await sleep(60);
    expect(calls).toBe(1);
  });

  it('does not call back once cancelled, also when cancelled after the timer fired and before the look', async () => {
    let calls = 0;
    const before = afterPendingIo(20, () => calls++);
    before.cancel();
    const between = afterPendingIo(10, () => calls++);
    // a timer due at the same time runs in the same timers phase, before the look's setImmediate
    setTimeout(() => between.cancel(), 10);
    await sleep(60);
    expect(calls).toBe(0);
  });
});

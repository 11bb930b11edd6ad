// HistorySync and stop(): a provisioner can be stopped while it is still starting, so stop() may
// come before start() or while start() waits for the bucket. Neither may leave a retry timer
// behind: nothing would ever clear it, and it keeps the process alive after stop() returned.
import type { NatsConnection } from 'nats';
import { describe, expect, it } from 'vitest';
import { HistorySync, NodeHistory } from '../../../src/provisioner/history/index.js';
import { silentLogger } from '../../../src/util/logger.js';
import { testConfig } from '@choria-provisioner/test-support/settings';

/** A connection whose JetStream API never answers in time: each bind attempt is counted and failed when the test says so. */
class NoJetStream {
  attempts = 0;
  readonly #waiting: ((err: Error) => void)[] = [];

  readonly nc = {
    jetstreamManager: (): Promise<never> => {
      this.attempts++;
      return new Promise<never>((_resolve, reject) => this.#waiting.push(reject));
    },
  } as unknown as NatsConnection;

  /** Fails every bind attempt under way as a broker without JetStream does. */
  failAll(): void {
    for (const reject of this.#waiting.splice(0)) reject(new Error('no JetStream answers under $JS.API'));
  }
}

function historySync(): HistorySync {
  const config = testConfig('history_store: kv\n');
  const history = new NodeHistory({
    policy: { backoffMs: 1000, backoffMaxMs: 10_000, quarantineAfter: 0 },
    instance: 'prov1.example.net',
    ttlMs: 86_400_000,
  });
  return new HistorySync({ history, config, logger: silentLogger(), readOnly: false, retryMs: 10 });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('HistorySync stopped while starting', () => {
  it('a start() after stop() binds nothing and arms no retry', async () => {
    const broker = new NoJetStream();
    const sync = historySync();
    await sync.stop(0);
    const starting = sync.start(broker.nc);
    broker.failAll();
    await starting;
    await sleep(60);
    broker.failAll();
    expect(broker.attempts).toBe(0);
  });

  it('a stop() while the first bind is under way leaves no retry timer once the bind fails', async () => {
    const broker = new NoJetStream();
    const sync = historySync();
    const starting = sync.start(broker.nc);
    expect(broker.attempts).toBe(1);
    await sync.stop(0);
    broker.failAll();
    await starting;
    // a retry timer would try again every 10 ms
    await sleep(60);
    broker.failAll();
    expect(broker.attempts).toBe(1);
    expect(sync.status()).toMatchObject({ store: 'memory' });
  });

  it('without a stop, an unreachable bucket is tried again (what the two tests above rule out after one)', async () => {
    const broker = new NoJetStream();
    const sync = historySync();
    const starting = sync.start(broker.nc);
    broker.failAll();
    await starting;
    for (let i = 0; i < 20 && broker.attempts < 3; i++) {
      await sleep(15);
      broker.failAll();
    }
    await sync.stop(0);
    expect(broker.attempts).toBeGreaterThanOrEqual(3);
  });
});

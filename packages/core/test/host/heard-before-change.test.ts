// A node-changing request right after a broker outage waits until its node answers a ping, so
// that it is not published to a server that has not reconnected yet (and waited on for 22 s).
import { describe, expect, it } from 'vitest';
import type { ChoriaClient } from '../../src/choria/client.js';
import { RpcTimeoutError } from '../../src/choria/errors.js';
import { heardBeforeChange } from '../../src/host/heard-before-change.js';
import { changeStep } from '../../src/host/change-step.js';
import { readStep } from '../../src/host/read-step.js';
import type { StepContext } from '../../src/host/step.js';
import { Claim } from '../../src/host/claim.js';
import { PauseFlag } from '../../src/util/pause.js';
import { leaseLapsedError } from '../../src/util/cancelled.js';
import { captureLogger } from '../choria/support/logger.js';
import { fixedLink } from '../choria/support/link.js';

interface Link {
  up: boolean;
  changes: number;
  upSince: number;
}

/**
 * A client whose node is back after `backAfterMs` (from the client's making): until then every
 * request times out after its timeout; from then on it is answered at once.
 */
function scriptedClient(link: Link, backAfterMs: number) {
  const calls: { what: string; at: number; timeoutMs: number | undefined }[] = [];
  const made = performance.now();
  const client = {
    link: fixedLink(() => ({ ...link })),
    rpc(
      to: string,
      agent: string,
      action: string,
      _data: Record<string, unknown>,
      opts: { timeoutMs?: number; signal?: AbortSignal } = {},
    ) {
      const at = performance.now() - made;
      calls.push({ what: `${agent}#${action}`, at, timeoutMs: opts.timeoutMs });
      if (at >= backAfterMs) return Promise.resolve({ sender: to, data: {} });
      const timeoutMs = opts.timeoutMs ?? 22_000;
      return new Promise((_resolve, reject) =>
        setTimeout(() => reject(new RpcTimeoutError('timed out', timeoutMs, 0)), timeoutMs),
      );
    },
  };
  return { client: client as unknown as ChoriaClient, calls };
}

const justBack = (): Link => ({ up: true, changes: 2, upSince: performance.now() - 100 });
const options = (client: ChoriaClient, extra: Partial<Parameters<typeof heardBeforeChange>[0]> = {}) => ({
  client,
  identity: 'n1.example.net',
  signal: new AbortController().signal,
  pingTimeoutMs: 100,
  budgetMs: 2_000,
  mayAsk: () => undefined,
  ...extra,
});

describe('heardBeforeChange', () => {
  it('asks nothing while the link has been steady', async () => {
    const { client, calls } = scriptedClient({ up: true, changes: 0, upSince: 0 }, 0);
    expect(await heardBeforeChange(options(client))).toEqual({ how: 'settled' });
    const { client: old, calls: oldCalls } = scriptedClient(
      { up: true, changes: 2, upSince: performance.now() - 60_000 },
      0,
    );
    expect(await heardBeforeChange(options(old))).toEqual({ how: 'settled' });
    expect([...calls, ...oldCalls]).toEqual([]);
  });

  it('pings a node that has not reconnected yet until it answers', async () => {
    const { client, calls } = scriptedClient(justBack(), 350);
    const heard = await heardBeforeChange(options(client));
    expect(heard).toMatchObject({ how: 'heard' });
    expect(calls.every((c) => c.what === 'rpcutil#ping' && c.timeoutMs === 100)).toBe(true);
    expect(calls.length).toBeGreaterThanOrEqual(4);
    expect(heard.how === 'heard' && heard.waitedMs).toBeLessThan(1_000);
  });

  it('takes a refusal as an answer: the node is connected', async () => {
    const { client } = scriptedClient(justBack(), 0);
    (client as unknown as { rpc: () => Promise<never> }).rpc = () => Promise.reject(new Error('unknown agent rpcutil'));
    expect(await heardBeforeChange(options(client))).toMatchObject({ how: 'heard', pings: 1 });
  });

  it('gives up after its budget, so the request goes out as it did before', async () => {
    const { client, calls } = scriptedClient(justBack(), Infinity);
    const started = performance.now();
    const heard = await heardBeforeChange(options(client, { budgetMs: 500 }));
    expect(heard).toMatchObject({ how: 'unheard' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(480);
    expect(performance.now() - started).toBeLessThan(1_500);
    expect(calls.length).toBeGreaterThanOrEqual(4);
  });

  it('waits out an outage before its budget starts', async () => {
    const link: Link = { up: false, changes: 1, upSince: 0 };
    const { client, calls } = scriptedClient(link, 900);
    setTimeout(() => Object.assign(link, { up: true, changes: 2, upSince: performance.now() }), 700);
    const heard = await heardBeforeChange(options(client, { budgetMs: 600 }));
    // down for 700 ms, longer than the budget: still heard once the node is back
    expect(heard).toMatchObject({ how: 'heard' });
    expect(calls[0]?.at).toBeGreaterThanOrEqual(690);
  });

  it('sends no ping once mayAsk refuses, and ends when the attempt is cancelled', async () => {
    const { client, calls } = scriptedClient(justBack(), Infinity);
    const lost = leaseLapsedError('rpcutil#ping before choria_provision#configure', 'the lease lapsed');
    await expect(
      heardBeforeChange(
        options(client, {
          mayAsk: () => {
            throw lost;
          },
        }),
      ),
    ).rejects.toBe(lost);
    expect(calls).toEqual([]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('stopping')), 150);
    await expect(
      heardBeforeChange(options(client, { signal: controller.signal, pingTimeoutMs: 1_000 })),
    ).rejects.toBeDefined();
  });
});

describe('the steps after a broker outage', () => {
  const context = (
    client: ChoriaClient,
    pause = new PauseFlag(),
  ): { ctx: StepContext; log: ReturnType<typeof captureLogger> } => {
    const log = captureLogger('info');
    const metrics = {
      rpcTime: () => undefined,
      rpcError: () => undefined,
      helperTime: () => undefined,
      helperError: () => undefined,
      helperShutdownRequest: () => undefined,
      lostReply: () => undefined,
    };
    return {
      ctx: {
        identity: 'n1.example.net',
        claim: new Claim('n1.example.net'),
        client,
        metrics,
        pause,
        signal: new AbortController().signal,
        logger: log.logger,
        timeoutMs: 1_000,
      },
      log,
    };
  };
  const configure = {
    agent: 'choria_provision' as const,
    action: 'configure',
    data: { token: 'x' },
    parse: () => 'ok',
  };

  it('sends configure only once the node answered a ping, not into the void', async () => {
    const { client, calls } = scriptedClient(justBack(), 500);
    const { ctx, log } = context(client);
    expect(await changeStep(ctx, configure)).toEqual({ replied: true, value: 'ok' });
    const sent = calls.filter((c) => c.what === 'choria_provision#configure');
    // one configure, answered: without the pings it would have gone out at once and timed out
    expect(sent).toHaveLength(1);
    expect(sent[0]?.at).toBeGreaterThanOrEqual(500);
    expect(calls.filter((c) => c.what === 'rpcutil#ping').length).toBeGreaterThanOrEqual(1);
    expect(log.text()).toMatch(
      /n1\.example\.net answered rpcutil#ping after \d+ ms \(\d+ pings\) while the servers were reconnecting to the broker; sending choria_provision#configure/,
    );
  });

  it('reads without pinging first, and changes at once on a steady link', async () => {
    const { client, calls } = scriptedClient({ up: true, changes: 0, upSince: 0 }, 0);
    expect(await changeStep(context(client).ctx, configure)).toEqual({ replied: true, value: 'ok' });
    const { client: back, calls: backCalls } = scriptedClient(justBack(), 0);
    expect(
      await readStep(context(back).ctx, { agent: 'rpcutil', action: 'inventory', data: {}, parse: () => 'inv' }),
    ).toBe('inv');
    expect([...calls, ...backCalls].map((c) => c.what)).toEqual(['choria_provision#configure', 'rpcutil#inventory']);
  });

  it('a pause while waiting ends the step without sending', async () => {
    const { client, calls } = scriptedClient(justBack(), Infinity);
    const pause = new PauseFlag();
    setTimeout(() => pause.pause(), 250);
    await expect(changeStep(context(client, pause).ctx, configure)).rejects.toMatchObject({
      name: 'CancelledError',
      reason: 'pause',
    });
    expect(calls.map((c) => c.what)).not.toContain('choria_provision#configure');
  });
});

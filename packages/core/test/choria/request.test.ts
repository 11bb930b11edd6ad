// A request in flight owns its timers, its mux entry and its abort listener; cancel() is the only
// cleanup, whatever ends the request.
import type { Msg } from 'nats';
import { describe, expect, it } from 'vitest';
import { RpcAbortError, RpcReplyLostError, RpcTimeoutError } from '../../src/choria/errors.js';
import type { NodeIdentity } from '../../src/choria/identity.js';
import type { DecodedReply } from '../../src/choria/protocol/types.js';
import { DirectedRequest, DiscoveryRequest, type RequestMux } from '../../src/choria/request.js';
import { silentLogger } from '../../src/util/logger.js';
import { LogBudget } from '../../src/util/log-budget.js';

const msg = (sender: string): Msg => ({ data: Buffer.from(sender) }) as unknown as Msg;
const text = (m: Msg): string => Buffer.from(m.data).toString();

function directed(mux: RequestMux, o: { timeoutMs?: number; graceMs?: number; signal?: AbortSignal } = {}) {
  const timedOut: number[] = [];
  const request = new DirectedRequest<string>({
    id: 'r1',
    mux,
    ...(o.signal !== undefined ? { signal: o.signal } : {}),
    logger: silentLogger(),
    budget: new LogBudget(silentLogger()),
    identity: 'n1.example.net',
    what: 'request rpcutil#ping to n1.example.net',
    timeoutMs: o.timeoutMs ?? 1_000,
    reconnectGraceMs: o.graceMs ?? 0,
    decode: (m) => ({ sender: text(m) }) as unknown as DecodedReply,
    admitSender: (sender) => !sender.includes(' '),
    result: (reply, responses) => `${reply.sender} after ${responses} responses`,
    timedOut: () => timedOut.push(1),
  });
  return { request, timedOut };
}

describe('DirectedRequest', () => {
  it('settles with the target reply, counting other senders, and leaves the mux', async () => {
    const mux: RequestMux = new Map();
    const { request } = directed(mux);
    expect(mux.get('r1')).toBe(request);
    request.onMessage(msg('not a node'));
    request.onMessage(msg('n2.example.net'));
    request.onMessage(msg('n1.example.net'));
    await expect(request.promise).resolves.toBe('n1.example.net after 2 responses');
    expect(mux.size).toBe(0);
  });

  it('times out once, tells the client, and frees its entry', async () => {
    const mux: RequestMux = new Map();
    const { request, timedOut } = directed(mux, { timeoutMs: 20 });
    await expect(request.promise).rejects.toBeInstanceOf(RpcTimeoutError);
    expect(timedOut).toEqual([1]);
    expect(mux.size).toBe(0);
  });

  it('ends on an abort, and its listener goes with it', async () => {
    const mux: RequestMux = new Map();
    const controller = new AbortController();
    const { request } = directed(mux, { signal: controller.signal });
    controller.abort(new Error('stopping'));
    await expect(request.promise).rejects.toBeInstanceOf(RpcAbortError);
    expect(mux.size).toBe(0);
  });

  it('after a reconnect waits its grace for a late reply, then the reply is lost', async () => {
    const mux: RequestMux = new Map();
    const { request, timedOut } = directed(mux, { graceMs: 20 });
    request.onReconnect?.();
    await expect(request.promise).rejects.toBeInstanceOf(RpcReplyLostError);
    expect(timedOut).toEqual([]);
    expect(directed(new Map()).request.onReconnect).toBeUndefined();
  });
});

describe('DiscoveryRequest', () => {
  it('collects each sender once until the window after the last reply closes', async () => {
    const mux: RequestMux = new Map();
    const found: string[] = [];
    const request = new DiscoveryRequest({
      id: 'd1',
      mux,
      logger: silentLogger(),
      timeoutMs: 5_000,
      initialWaitMs: 200,
      windowMs: 50,
      onFound: (identity) => found.push(identity),
      sender: (m) => text(m) as NodeIdentity,
    });
    request.onMessage(msg('a.example.net'));
    request.onMessage(msg('b.example.net'));
    request.onMessage(msg('a.example.net'));
    const started = performance.now();
    await expect(request.promise).resolves.toEqual(['a.example.net', 'b.example.net']);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(found).toEqual(['a.example.net', 'b.example.net']);
    expect(mux.size).toBe(0);
  });

  it('ends at the limit', async () => {
    const request = new DiscoveryRequest({
      id: 'd2',
      mux: new Map(),
      logger: silentLogger(),
      timeoutMs: 5_000,
      initialWaitMs: 5_000,
      windowMs: 5_000,
      limit: 1,
      sender: (m) => text(m) as NodeIdentity,
    });
    request.onMessage(msg('a.example.net'));
    await expect(request.promise).resolves.toEqual(['a.example.net']);
  });
});

// The one probe of a node, and its one rule of silence: a timeout or a reply lost with the broker
// is silence; any other failure is an answer (a refusal means the node is connected); an abort or a
// closed client ends the probe.
import { describe, expect, it } from 'vitest';
import type { ChoriaClient } from '../../src/choria/client.js';
import {
  ClientClosedError,
  RpcAbortError,
  RpcReplyLostError,
  RpcStatusError,
  RpcTimeoutError,
} from '../../src/choria/errors.js';
import { NodeProbe } from '../../src/host/node-probe.js';

const NODE = 'n1.example.net';
const refusal = (): RpcStatusError =>
  new RpcStatusError({ sender: NODE, action: 'jwt', statuscode: 1, statusmsg: 'no', data: {}, requestId: 'r' });

/** A client whose every request ends as `outcome` says; `found`: what a discovery finds. */
function clientAnswering(
  outcome: () => Promise<unknown>,
  found: string[] = [],
): { client: ChoriaClient; asked: string[] } {
  const asked: string[] = [];
  const client = {
    rpc: (_to: string, agent: string, action: string) => {
      asked.push(`${agent}#${action}`);
      return outcome();
    },
    discover: () => Promise.resolve(found),
  };
  return { client: client as unknown as ChoriaClient, asked };
}

const probeOf = (client: ChoriaClient): NodeProbe => new NodeProbe(client, NODE, new AbortController().signal);

describe('NodeProbe', () => {
  it('ping: silent only when no reply came, answered for any reply or refusal', async () => {
    const cases: [() => Promise<unknown>, string][] = [
      [() => Promise.resolve({ sender: NODE, data: {} }), 'answered'],
      [() => Promise.reject(refusal()), 'answered'],
      [() => Promise.reject(new RpcTimeoutError('timed out', 100, 0)), 'silent'],
      [() => Promise.reject(new RpcReplyLostError('lost with the broker')), 'silent'],
    ];
    for (const [outcome, expected] of cases) {
      const { client, asked } = clientAnswering(outcome);
      expect(await probeOf(client).ping(100)).toBe(expected);
      expect(asked).toEqual(['rpcutil#ping']);
    }
  });

  it('ends (throws) on an abort or a closed client: nothing was learned', async () => {
    const aborted = clientAnswering(() => Promise.reject(new RpcAbortError('aborted', 'stop')));
    await expect(probeOf(aborted.client).ping(100)).rejects.toBeInstanceOf(RpcAbortError);
    const closed = clientAnswering(() => Promise.reject(new ClientClosedError('closed')));
    await expect(probeOf(closed.client).agentBusy('t', 100)).rejects.toBeInstanceOf(ClientClosedError);
  });

  it('agentBusy: busy when jwt gets no reply, idle for an answer or a refusal', async () => {
    const silent = clientAnswering(() => Promise.reject(new RpcTimeoutError('timed out', 100, 0)));
    expect(await probeOf(silent.client).agentBusy('s3cret', 100)).toBe(true);
    expect(silent.asked).toEqual(['choria_provision#jwt']);
    expect(await probeOf(clientAnswering(() => Promise.reject(refusal())).client).agentBusy('', 100)).toBe(false);
  });

  it('runsVersion: only an inventory reporting that version', async () => {
    const inventory = (version: unknown) => () =>
      Promise.resolve({ sender: NODE, data: { version, agents: ['rpcutil'] } });
    expect(await probeOf(clientAnswering(inventory('0.30.3')).client).runsVersion('0.30.3', 100)).toBe(true);
    expect(await probeOf(clientAnswering(inventory('0.30.2')).client).runsVersion('0.30.3', 100)).toBe(false);
    expect(await probeOf(clientAnswering(inventory('')).client).runsVersion('0.30.3', 100)).toBe(false);
    const silent = clientAnswering(() => Promise.reject(new RpcTimeoutError('timed out', 100, 0)));
    expect(await probeOf(silent.client).runsVersion('0.30.3', 100)).toBe(false);
  });

  it('present: a discovery with the node identity finds it', async () => {
    expect(await probeOf(clientAnswering(() => Promise.resolve(), [NODE]).client).present(100)).toBe(true);
    expect(await probeOf(clientAnswering(() => Promise.resolve(), ['other.example.net']).client).present(100)).toBe(
      false,
    );
  });
});

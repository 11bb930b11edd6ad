import { describe, expect, it } from 'vitest';
import type { ChoriaClient } from '../../src/choria/client.js';
import { RpcAbortedError, RpcTimeoutError } from '../../src/choria/errors.js';
import type { LifecycleWitness } from '../../src/host/lifecycle-witness.js';
import { confirmAfterLostReply, type LostReplyTimings } from '../../src/host/lost-reply.js';
import { BrokerLink, FLEET_RECONNECT_MS, linkSettled } from '../../src/choria/link.js';
import { sleep } from '../../src/util/backoff.js';
import { rediscoveryDelaysMs } from '../../src/provisioner/rediscovery.js';
import { fixedLink } from '../choria/support/link.js';

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

  it('is one setting: the servers get the link fleet-reconnect time, and the first rediscovery after a return waits as long', () => {
    expect(FLEET_RECONNECT_MS).toBe(5_000);
    expect(rediscoveryDelaysMs(FLEET_RECONNECT_MS)).toEqual([5_000, 15_000]);
    expect(
      linkSettled(up(2, at - FLEET_RECONNECT_MS + 1), up(2, at - FLEET_RECONNECT_MS + 1), FLEET_RECONNECT_MS, at),
    ).toBe(false);
    expect(linkSettled(up(2, at - FLEET_RECONNECT_MS), up(2, at - FLEET_RECONNECT_MS), FLEET_RECONNECT_MS, at)).toBe(
      true,
    );
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
    const upSince = performance.now() - reconnectedAgoMs;
    const client = {
      link: fixedLink(() => ({ up: true, changes: 2, upSince })),
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

// release_update downloads the release before it acts, for as long as that takes, and go-choria
// sends no reply past the agent's 20 s deadline: a node still answering discovery may be busy
// with it. Its provisioning agent answers `jwt` only when idle (one mutex for every action).
describe('confirmAfterLostReply for release_update', () => {
  const identity = 'n1.example.net';
  /** A node that answers discovery; `jwt` is answered, refused or left unanswered per call. */
  function nodeAnswering(jwt: (call: number) => 'answer' | 'refuse' | 'silent', inventoryVersion?: string) {
    const calls: string[] = [];
    const client = {
      link: fixedLink(() => ({ up: true, changes: 0, upSince: 0 })),
      discover: () => Promise.resolve([identity]),
      rpc: (to: string, agent: string, action: string, data: Record<string, unknown>, opts: { timeoutMs: number }) => {
        calls.push(`${to} ${agent}#${action} token=${String(data['token'])}`);
        if (action === 'inventory') {
          if (inventoryVersion === undefined)
            return new Promise((_resolve, reject) =>
              setTimeout(() => reject(new RpcTimeoutError('timed out', opts.timeoutMs, 0)), opts.timeoutMs),
            );
          return Promise.resolve({
            sender: to,
            data: { version: inventoryVersion, upgradable: true, agents: ['rpcutil'] },
          });
        }
        const how = jwt(calls.length);
        if (how === 'answer') return Promise.resolve({ sender: to, data: { jwt: '' } });
        if (how === 'refuse') {
          return Promise.reject(
            new RpcAbortedError({
              sender: to,
              action,
              statuscode: 1,
              statusmsg: 'No Provisioning JWT file has been configured',
              data: {},
              requestId: 'r',
            }),
          );
        }
        return new Promise((_resolve, reject) =>
          setTimeout(() => reject(new RpcTimeoutError('timed out', opts.timeoutMs, 0)), opts.timeoutMs),
        );
      },
    };
    return { client: client as unknown as ChoriaClient, calls };
  }
  const request = (client: ChoriaClient, witness?: { acted: boolean }, timings: LostReplyTimings = {}) => ({
    client,
    witness: witness === undefined ? undefined : ({ sawSince: () => witness.acted } as unknown as LifecycleWitness),
    identity,
    action: 'release_update' as const,
    sentAt: performance.now(),
    reconnected: false,
    signal: new AbortController().signal,
    token: 's3cret',
    timings: {
      marginMs: 100,
      probeIntervalMs: 20,
      probeTimeoutMs: 50,
      actionDelayScale: 0,
      busyRecheckMs: 0,
      ...timings,
    },
  });

  it('an agent that answers jwt is idle: the update did not happen and may be sent again', async () => {
    const { client, calls } = nodeAnswering(() => 'answer');
    expect(await confirmAfterLostReply(request(client))).toBe('not_acted');
    expect(calls).toEqual([`${identity} choria_provision#jwt token=s3cret`]);
  });

  it('a refusal to jwt is an answer too: the agent is idle', async () => {
    const { client } = nodeAnswering(() => 'refuse');
    expect(await confirmAfterLostReply(request(client))).toBe('not_acted');
  });

  it('an agent that does not answer jwt is still busy: watched until the upgraded event, never judged not acted', async () => {
    const witness = { acted: false };
    const { client, calls } = nodeAnswering(() => 'silent');
    let busyTold = 0;
    const watching = confirmAfterLostReply({ ...request(client, witness), onBusy: () => busyTold++ });
    await sleep(600);
    witness.acted = true;
    expect(await watching).toBe('acted');
    expect(calls.length).toBeGreaterThanOrEqual(3);
    expect(busyTold).toBe(1);
  });

  it('busy, then idle without any event (the update failed and its abort reply was lost too): not acted', async () => {
    const { client, calls } = nodeAnswering((call) => (call <= 2 ? 'silent' : 'answer'));
    expect(await confirmAfterLostReply(request(client))).toBe('not_acted');
    expect(calls).toHaveLength(3);
  });

  it('a busy agent is asked again only every busyRecheckMs; discovery goes on at every probe meanwhile', async () => {
    const witness = { acted: false };
    const { client, calls } = nodeAnswering(() => 'silent');
    let discovered = 0;
    const counting = Object.assign(Object.create(client) as object, {
      discover: () => ((discovered += 1), Promise.resolve([identity])),
    }) as ChoriaClient;
    const watching = confirmAfterLostReply(request(counting, witness, { busyRecheckMs: 400 }));
    await sleep(1_200);
    witness.acted = true;
    expect(await watching).toBe('acted');
    // at ~100 ms (after the margin), ~550 and ~1,000 ms: at most three questions, not one per probe
    expect(calls.length).toBeGreaterThanOrEqual(2);
    expect(calls.length).toBeLessThanOrEqual(3);
    expect(discovered).toBeGreaterThan(calls.length * 5);
  });

  it('busy for longer than maxBusyMs: taken as not acted', async () => {
    const { client } = nodeAnswering(() => 'silent');
    const started = performance.now();
    expect(await confirmAfterLostReply(request(client, { acted: false }, { maxBusyMs: 300 }))).toBe('not_acted');
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  // The server re-executes 2 s after installing: back in provisioning mode within the watch, its
  // `upgraded` and `startup` events lost with a broker outage, it answers like one that never acted.
  it('idle and already running the version it was asked for (its events lost): acted, not sent the update again', async () => {
    const { client, calls } = nodeAnswering(() => 'answer', '0.30.0');
    let back = 0;
    expect(await confirmAfterLostReply({ ...request(client), targetVersion: '0.30.0', onBack: () => back++ })).toBe(
      'acted',
    );
    expect(calls).toEqual([
      `${identity} choria_provision#jwt token=s3cret`,
      `${identity} rpcutil#inventory token=undefined`,
    ]);
    // known to be waiting in provisioning mode again: the provisioner offers it again at once
    expect(back).toBe(1);
  });

  it('acted by its event: not told back, the node may still be re-executing', async () => {
    const { client } = nodeAnswering(() => 'answer', '0.30.0');
    let back = 0;
    expect(
      await confirmAfterLostReply({
        ...request(client, { acted: true }),
        targetVersion: '0.30.0',
        onBack: () => back++,
      }),
    ).toBe('acted');
    expect(back).toBe(0);
  });

  it('idle and still on its old version: not acted', async () => {
    const { client } = nodeAnswering(() => 'answer', '0.29.4');
    expect(await confirmAfterLostReply({ ...request(client), targetVersion: '0.30.0' })).toBe('not_acted');
  });

  it('idle and not answering inventory: proves nothing, not acted as before', async () => {
    const { client, calls } = nodeAnswering(() => 'answer');
    expect(await confirmAfterLostReply({ ...request(client), targetVersion: '0.30.0' })).toBe('not_acted');
    expect(calls.at(-1)).toBe(`${identity} rpcutil#inventory token=undefined`);
  });

  it('restart is never asked jwt: its delay is all it takes', async () => {
    const { client, calls } = nodeAnswering(() => 'silent');
    expect(await confirmAfterLostReply({ ...request(client), action: 'restart' })).toBe('not_acted');
    expect(calls).toEqual([]);
  });
});

// The client's one owner of the link's state: its epoch, up or down, settled after a return.
describe('BrokerLink', () => {
  it('counts drops and returns, tells its listeners of a return, and settles after its fleet-reconnect time', async () => {
    let closed = false;
    const link = new BrokerLink({ fleetReconnectMs: 200, closed: () => closed });
    expect(link.state).toMatchObject({ up: true, changes: 0 });
    expect(link.settled).toBe(true);
    const before = link.state;
    let restored = 0;
    const undo = link.onRestored(() => restored++);
    link.dropped();
    link.dropped(); // a second disconnect status while down: still one outage
    expect(link.state).toMatchObject({ up: false, changes: 2 });
    expect(link.settledSince(before)).toBe(false);
    expect(link.restored()).toBe(true);
    expect(restored).toBe(1);
    expect(link.state).toMatchObject({ up: true, changes: 3 });
    expect(link.settled).toBe(false);
    await sleep(220);
    expect(link.settled).toBe(true);
    // silence seen across the outage still says nothing
    expect(link.settledSince(before)).toBe(false);
    // a reconnect status without a drop calls no one
    expect(link.restored()).toBe(false);
    expect(restored).toBe(1);
    undo();
    link.dropped();
    link.restored();
    expect(restored).toBe(1);
    closed = true;
    expect(link.state.up).toBe(false);
    expect(new BrokerLink({ closed: () => false }).fleetReconnectMs).toBe(FLEET_RECONNECT_MS);
  });
});

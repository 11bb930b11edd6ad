// A Host on its own: built from a config, a Choria client, a helper, metrics and a pause flag, with
// no scheduler, against scripted provisioning-mode responders on a real broker.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ChoriaClient } from '../../src/choria/client.js';
import { parseRpcRequest, type RpcReplyBody } from '../../src/choria/protocol/mcorpc.js';
import { serverSidePayload } from '../../src/choria/protocol/codec.js';
import { createHelperRunner } from '../../src/host/helper/index.js';
import type { HelperRequest } from '../../src/host/helper/types.js';
import { Host, createHostRunner, type HostDeps } from '../../src/host/host.js';
import type { LostReplyTimings } from '../../src/host/lost-reply.js';
import type { HostJob } from '../../src/host/types.js';
import { ProvisionerMetrics } from '../../src/metrics/metrics.js';
import { PauseFlag } from '../../src/util/pause.js';
import { silentLogger } from '../../src/util/logger.js';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { testClient, testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { startResponders, type RpcContext } from '../choria/support/responder.js';
import { captureLogger } from '../choria/support/logger.js';

const NODE = 'web1.example.net';
const INVENTORY = {
  agents: ['choria_provision', 'rpcutil'],
  version: '0.29.4',
  upgradable: false,
  facts: { role: 'web' },
};
const QUICK: LostReplyTimings = {
  actionDelayScale: 0.001,
  marginMs: 100,
  probeTimeoutMs: 200,
  probeIntervalMs: 50,
  reconnectGraceMs: 100,
};

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const ok = (ctx: RpcContext, data: unknown = {}): RpcReplyBody => ({
  action: ctx.request.action,
  statuscode: 0,
  statusmsg: 'OK',
  data,
});

async function setup(onRpc: (ctx: RpcContext) => RpcReplyBody | undefined): Promise<{
  client: ChoriaClient;
  sent: () => string[];
  helped: HelperRequest[];
  deps: HostDeps;
  registry: Registry;
}> {
  const srv: RunningNatsServer = await startNatsServer({ jetstream: false });
  cleanups.push(() => srv.stop());
  const responders = await startResponders({ url: srv.url, identities: [NODE], onRpc });
  cleanups.push(() => responders.close());
  const config = testConfig('');
  // the servers of these tests are back at once after a broker restart
  const client = await testClient(testSettings(srv.url, config), 0);
  cleanups.push(() => client.close());
  const helped: HelperRequest[] = [];
  const helper = createHelperRunner({
    fn: (req) => {
      helped.push(req);
      return { configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' } };
    },
  });
  cleanups.push(() => helper.close());
  const registry = new Registry();
  const deps: HostDeps = {
    config,
    client,
    helper,
    metrics: new ProvisionerMetrics(registry, 'test'),
    pause: new PauseFlag(false),
    rpcTimeoutMs: 500,
    lostReply: QUICK,
  };
  const sent = (): string[] =>
    responders.requests.map((d) => {
      const body = parseRpcRequest(serverSidePayload(d.payload).toString('utf8'));
      return `${d.agent}#${body.action}`;
    });
  return { client, sent, helped, deps, registry };
}

function job(extra: Partial<HostJob> = {}): HostJob {
  return {
    identity: NODE,
    discoveredAt: Date.now(),
    signal: new AbortController().signal,
    logger: silentLogger(),
    onStep: () => undefined,
    ...extra,
  };
}

describe('Host', () => {
  it('provisions a node in the upstream order with a function helper', async () => {
    const { sent, helped, deps } = await setup((ctx) =>
      ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx),
    );
    const steps: string[] = [];
    const result = await new Host(deps, job({ onStep: (s) => steps.push(s) })).provision();
    expect(result).toEqual({ outcome: 'provisioned' });
    expect(sent()).toEqual(['rpcutil#inventory', 'choria_provision#configure', 'choria_provision#restart']);
    expect(steps).toEqual(['inventory', 'helper', 'configure', 'restart']);
    expect(helped).toHaveLength(1);
    expect(JSON.parse(helped[0]?.inventory ?? '{}')).toEqual(INVENTORY);
  });

  it('a node that misses the first short try but answers the ping is slow, not gone: the step goes on with its full timeout', async () => {
    let inventories = 0;
    const { sent, deps } = await setup((ctx) => {
      if (ctx.request.action === 'inventory' && ++inventories === 1) return undefined; // the first request is lost
      return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
    });
    const live = { ...deps, config: testConfig('liveness_timeout: 200ms\n') };
    const started = Date.now();
    expect(await new Host(live, job()).provision()).toEqual({ outcome: 'provisioned' });
    expect(sent()).toEqual([
      'rpcutil#inventory',
      'rpcutil#ping',
      'rpcutil#inventory',
      'choria_provision#configure',
      'choria_provision#restart',
    ]);
    // no back-off after the ping answered
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('a node that answers neither the short first try nor the ping is gone, after those two requests', async () => {
    const { sent, deps } = await setup(() => undefined);
    const live = { ...deps, config: testConfig('liveness_timeout: 200ms\n') };
    const r = await new Host(live, job()).provision();
    expect(r.outcome).toBe('gone');
    expect(sent()).toEqual(['rpcutil#inventory', 'rpcutil#ping']);
  });

  describe('a reply that cannot be read ends the step at its first try (asking again gets the same)', () => {
    const nested = (depth: number): unknown => {
      let v: unknown = 1;
      for (let i = 0; i < depth; i++) v = { a: v };
      return v;
    };
    it.each([
      [
        'an inventory nested deeper than any reply does',
        { ...INVENTORY, facts: nested(600) },
        /nests arrays and objects more than 512 deep/,
      ],
      ['an inventory that is not an object', ['not', 'an', 'object'], /reply data is not an object/],
      ['an inventory whose version is a number', { ...INVENTORY, version: 7 }, /field version is a number/],
    ])('%s', async (_what, inventory, why) => {
      const { sent, helped, deps } = await setup((ctx) =>
        ctx.request.action === 'inventory' ? ok(ctx, inventory) : ok(ctx),
      );
      const r = await new Host(deps, job()).provision();
      expect(r.outcome).toBe('failed');
      expect(r.message).toMatch(/could not perform rpcutil#inventory on web1\.example\.net: 1 try/);
      expect(r.message).toMatch(why);
      expect(sent()).toEqual(['rpcutil#inventory']);
      expect(helped).toHaveLength(0);
    });
  });

  describe('active/active without features.jwt: the node lock is claimed before the helper', () => {
    const activeActive = (deps: HostDeps): HostDeps => ({
      ...deps,
      config: testConfig('coordination: active_active\n'),
    });
    const refuse = (ctx: RpcContext, msg: string): RpcReplyBody => ({
      action: ctx.request.action,
      statuscode: 1,
      statusmsg: msg,
      data: {},
    });

    it('asks for jwt first and carries on when the node refuses it (the lock was taken anyway)', async () => {
      const { sent, helped, deps, registry } = await setup((ctx) => {
        if (ctx.request.action === 'jwt') return refuse(ctx, 'No Provisioning JWT file has been configured');
        return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
      });
      const steps: string[] = [];
      expect(await new Host(activeActive(deps), job({ onStep: (s) => steps.push(s) })).provision()).toEqual({
        outcome: 'provisioned',
      });
      expect(sent()).toEqual([
        'choria_provision#jwt',
        'rpcutil#inventory',
        'choria_provision#configure',
        'choria_provision#restart',
      ]);
      expect(steps[0]).toBe('lock');
      expect(helped).toHaveLength(1);
      // an answer, not a failure: no RPC error counted, one try
      expect(await registry.metrics()).not.toMatch(
        /choria_provisioner_rpc_errors\{[^}]*rpc="choria_provision#jwt"\} [1-9]/,
      );
    });

    it('runs no helper for a node whose lock another provisioner holds', async () => {
      const { sent, helped, deps } = await setup((ctx) =>
        ctx.request.action === 'jwt'
          ? { action: 'jwt', statuscode: 1, statusmsg: 'Could not obtain provisioning lock', data: {} }
          : ok(ctx, INVENTORY),
      );
      const result = await new Host(activeActive(deps), job()).provision();
      expect(result.outcome).toBe('skipped_locked');
      expect(sent()).toEqual(['choria_provision#jwt']);
      expect(helped).toHaveLength(0);
    });

    it('skips the claim for a node older than the lock (go-choria 0.29.0), which has nothing to claim', async () => {
      const { sent, deps } = await setup((ctx) => (ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx)));
      expect(await new Host(activeActive(deps), job({ reportedVersion: '0.28.0' })).provision()).toEqual({
        outcome: 'provisioned',
      });
      expect(sent()[0]).toBe('rpcutil#inventory');
    });
  });

  it('a node that never answers its restart but stays in provisioning mode: sent again after watching, then failed as configured', async () => {
    const { sent, deps, registry } = await setup((ctx) => {
      if (ctx.request.action === 'restart') return undefined;
      return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
    });
    const result = await new Host(deps, job()).provision();
    expect(result.outcome).toBe('failed');
    expect(result.configured).toBe(true);
    expect(result.message).toMatch(
      /^could not perform choria_provision#restart on web1\.example\.net: 3 tries, last: request choria_provision#restart to web1\.example\.net timed out/,
    );
    expect(sent().filter((s) => s === 'choria_provision#restart')).toHaveLength(3);
    const text = await registry.metrics();
    expect(text).toContain(
      'choria_provisioner_lost_replies{site="test",rpc="choria_provision#restart",finding="not_acted"} 3',
    );
  });

  it('resumes at the restart when an earlier attempt configured the node', async () => {
    const { sent, helped, deps } = await setup((ctx) => ok(ctx));
    const result = await new Host(deps, job({ configuredAt: Date.now() - 1000 })).provision();
    expect(result).toEqual({
      outcome: 'provisioned',
      message: 'restarted with the configuration of an earlier attempt',
    });
    expect(sent()).toEqual(['choria_provision#restart']);
    expect(helped).toHaveLength(0);
  });

  it('falls back to the whole pipeline when the node refuses that restart (it lost its configuration)', async () => {
    let refused = false;
    const { sent, deps } = await setup((ctx) => {
      if (ctx.request.action === 'restart' && !refused) {
        refused = true;
        return {
          action: 'restart',
          statuscode: 1,
          statusmsg: 'Configuration /etc/choria/server.conf enables provisioning, restart cannot continue',
          data: {},
        };
      }
      return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
    });
    const result = await new Host(deps, job({ configuredAt: Date.now() - 1000 })).provision();
    expect(result).toEqual({ outcome: 'provisioned' });
    expect(sent()).toEqual([
      'choria_provision#restart',
      'rpcutil#inventory',
      'choria_provision#configure',
      'choria_provision#restart',
    ]);
  });

  describe('a restart go-choria refuses means "not configured", whatever its text', () => {
    const refusals = [
      'Configuration /etc/choria/server.conf could not be parsed, restart cannot continue: open /etc/choria/server.conf: no such file or directory',
      'Configuration /etc/choria/server.conf enables provisioning, restart cannot continue',
      'a refusal worded some other way',
    ];
    for (const text of refusals) {
      it(`remembered configuration, restart refused with "${text.slice(0, 40)}...": configured, then restarted; the refused restart is not sent again`, async () => {
        let refused = false;
        const { sent, deps } = await setup((ctx) => {
          if (ctx.request.action === 'restart' && !refused) {
            refused = true;
            return { action: 'restart', statuscode: 1, statusmsg: text, data: {} };
          }
          return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
        });
        expect(await new Host(deps, job({ configuredAt: Date.now() - 1000 })).provision()).toEqual({
          outcome: 'provisioned',
        });
        expect(sent()).toEqual([
          'choria_provision#restart',
          'rpcutil#inventory',
          'choria_provision#configure',
          'choria_provision#restart',
        ]);
      });
    }

    it('the memory of an earlier configure does not outlive one failed restart', async () => {
      const { sent, deps } = await setup((ctx) => (ctx.request.action === 'restart' ? undefined : ok(ctx)));
      const result = await new Host(
        { ...deps, backoff: () => 10 },
        job({ configuredAt: Date.now() - 1000 }),
      ).provision();
      expect(result.outcome).toBe('failed');
      expect(result.configured).toBeUndefined();
      expect(sent().every((s) => s === 'choria_provision#restart')).toBe(true);
    });

    it('a restart refused right after configure is not sent a second time in the attempt', async () => {
      const { sent, deps } = await setup((ctx) => {
        if (ctx.request.action === 'restart')
          return {
            action: 'restart',
            statuscode: 1,
            statusmsg: 'Configuration /etc/choria/server.conf enables provisioning, restart cannot continue',
            data: {},
          };
        return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
      });
      const result = await new Host(deps, job()).provision();
      expect(result.outcome).toBe('failed');
      expect(sent()).toEqual(['rpcutil#inventory', 'choria_provision#configure', 'choria_provision#restart']);
    });
  });

  describe('a cancelled attempt is not a failure, and never splits configure from restart', () => {
    it('cancelled during the helper: outcome cancelled, nothing more is sent', async () => {
      const abort = new AbortController();
      const { sent, deps } = await setup((ctx) => (ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx)));
      const helper = createHelperRunner({
        fn: () => {
          abort.abort(new Error('the provisioner is stopping'));
          return { configuration: { 'plugin.choria.server.provision': 'false' } };
        },
      });
      const result = await new Host({ ...deps, helper }, job({ signal: abort.signal })).provision();
      expect(result.outcome).toBe('cancelled');
      expect(result.message).toMatch(/cancelled: the provisioner is stopping/);
      expect(sent()).toEqual(['rpcutil#inventory']);
    });

    it('paused while configure is in flight: the restart is still sent and the node provisioned', async () => {
      const pause = new PauseFlag(false);
      const { sent, deps } = await setup((ctx) => {
        if (ctx.request.action === 'configure') pause.pause();
        return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
      });
      expect(await new Host({ ...deps, pause }, job()).provision()).toEqual({ outcome: 'provisioned' });
      expect(sent()).toEqual(['rpcutil#inventory', 'choria_provision#configure', 'choria_provision#restart']);
    });

    it('stopped while configure is in flight: configure and restart finish within the grace', async () => {
      const abort = new AbortController();
      const { sent, deps } = await setup((ctx) => {
        if (ctx.request.action === 'configure') abort.abort(new Error('the provisioner is stopping'));
        return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
      });
      expect(await new Host(deps, job({ signal: abort.signal })).provision()).toEqual({ outcome: 'provisioned' });
      expect(sent()).toEqual(['rpcutil#inventory', 'choria_provision#configure', 'choria_provision#restart']);
    });

    it('the grace is bounded: a restart that never answers is cancelled after it, as configured', async () => {
      const abort = new AbortController();
      const { deps } = await setup((ctx) => {
        if (ctx.request.action === 'configure') abort.abort(new Error('the provisioner is stopping'));
        if (ctx.request.action === 'restart') return undefined;
        return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
      });
      const started = Date.now();
      const result = await new Host(
        { ...deps, rpcTimeoutMs: 5_000, commitGraceMs: 300 },
        job({ signal: abort.signal }),
      ).provision();
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(result.outcome).toBe('cancelled');
      expect(result.configured).toBe(true);
    });

    it('paused before configure: nothing is sent that changes the node', async () => {
      const pause = new PauseFlag(false);
      const { sent, deps } = await setup((ctx) => (ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx)));
      const helper = createHelperRunner({
        fn: () => {
          pause.pause();
          return { configuration: { 'plugin.choria.server.provision': 'false' } };
        },
      });
      const result = await new Host({ ...deps, pause, helper }, job()).provision();
      expect(result.outcome).toBe('cancelled');
      expect(sent()).toEqual(['rpcutil#inventory']);
    });
  });

  it('a helper reply with a policy name go-choria refuses is refused before any RPC that changes the node', async () => {
    const { sent, deps } = await setup((ctx) => (ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx)));
    const helper = createHelperRunner({
      fn: () => ({
        configuration: { 'plugin.choria.server.provision': 'false' },
        action_policies: { rpcutil: 'policy default deny' },
      }),
    });
    const result = await new Host({ ...deps, helper }, job()).provision();
    expect(result.outcome).toBe('failed');
    expect(result.message).toMatch(/action_policies key "rpcutil" does not end in "\.policy"/);
    expect(sent()).toEqual(['rpcutil#inventory']);
    // the dry run (and so `helper test`) refuses it the same way
    const dry = await new Host({ ...deps, helper, dryRun: true }, job()).provision();
    expect(dry.outcome).toBe('failed');
  });

  it('createHostRunner opens its lifecycle subscriptions on the client and close() releases them', async () => {
    const { client, deps } = await setup((ctx) => ok(ctx));
    // nats.js keeps no public count; its protocol handler's subscription table is the evidence
    const subscriptions = (): number =>
      (client.nats as unknown as { protocol: { subscriptions: { size(): number } } }).protocol.subscriptions.size();
    const before = subscriptions();
    const { witness: _none, ...withoutWitness } = deps;
    const run = createHostRunner(withoutWitness);
    expect(subscriptions()).toBeGreaterThan(before);
    run.close?.();
    expect(subscriptions()).toBe(before);
  });

  /**
   * A node behind a broker that has just restarted: the provisioner's client and the node are both
   * back on it, and for `quietMs` from then the node answers nothing (as a real server that is
   * still reconnecting). `requests` counts what reached it, answered or not, by action.
   */
  async function justAfterBrokerRestart(
    yaml: string,
    quietMs: number,
    rpcTimeoutMs: number,
  ): Promise<{ deps: HostDeps; requests: Map<string, number> }> {
    const srv = await startNatsServer({ jetstream: false });
    cleanups.push(() => srv.stop());
    let quietUntil = Infinity;
    const requests = new Map<string, number>();
    const responders = await startResponders({
      url: srv.url,
      identities: [NODE],
      onRpc: (ctx) => {
        requests.set(ctx.request.action, (requests.get(ctx.request.action) ?? 0) + 1);
        if (performance.now() < quietUntil) return undefined;
        return ctx.request.action === 'inventory' ? ok(ctx, INVENTORY) : ok(ctx);
      },
    });
    cleanups.push(() => responders.close());
    const config = testConfig(yaml);
    const client = await testClient(testSettings(srv.url, config));
    cleanups.push(() => client.close());
    const helper = createHelperRunner({
      fn: (req) => ({ configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' } }),
    });
    cleanups.push(() => helper.close());
    const changes = client.link.state.changes;
    await srv.restart();
    const deadline = performance.now() + 10_000;
    const back = (): boolean => client.link.state.up && client.link.state.changes > changes;
    while (!back() && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300)); // the responders are back on the broker too
    requests.clear();
    quietUntil = performance.now() + quietMs;
    const lostReply = QUICK;
    return {
      requests,
      deps: {
        config,
        client,
        helper,
        metrics: new ProvisionerMetrics(new Registry(), 'test'),
        pause: new PauseFlag(false),
        rpcTimeoutMs,
        lostReply,
        backoff: () => 10,
      },
    };
  }

  it('a node silent just after a broker restart is not taken as gone: the step goes on', async () => {
    // Real servers reconnect on their own schedule after a broker restart, so for a few seconds
    // a healthy node answers neither its request nor the liveness ping.
    const { deps, requests } = await justAfterBrokerRestart('liveness_timeout: 200ms\n', 800, 3_000);
    const result = await new Host(deps, job()).provision();
    expect((requests.get('inventory') ?? 0) + (requests.get('ping') ?? 0)).toBeGreaterThanOrEqual(2); // the first inventory and the ping fell into the quiet
    expect(result.outcome).toBe('provisioned');
  });

  it('a read-only request lost to a broker restart is sent again at once, not after the full timeout, and costs no try', async () => {
    // no liveness probe: without the rule every lost inventory would wait the full 20 s; the
    // quiet is longer than two quick tries and far shorter than the full timeout
    const { deps, requests } = await justAfterBrokerRestart('liveness_timeout: 0s\n', 4_500, 20_000);
    const log = captureLogger('info');
    const started = performance.now();
    const result = await new Host(deps, job({ logger: log.logger })).provision();
    expect(result.outcome).toBe('provisioned');
    expect(performance.now() - started).toBeLessThan(12_000);
    expect(requests.get('inventory') ?? 0).toBeGreaterThanOrEqual(3); // two quiet tries, then the answered one
    expect(log.text()).toMatch(
      /rpcutil#inventory to web1\.example\.net met a broker outage \(.*timed out.*\); sending it again once the connection is back/,
    );
    expect(log.text()).not.toMatch(/Could not perform rpcutil#inventory/);
  });
});

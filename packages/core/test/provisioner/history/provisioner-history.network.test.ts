// The Provisioner and its history bucket, with a scripted HostRunner against a real nats-server:
// the memory fallback is said once and left as soon as the bucket can be reached (what was kept
// meanwhile is written to it); a dry run reads the bucket (a quarantined node stays alone) and
// writes nothing to it.
import { afterEach, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from 'nats';
import { Provisioner } from '../../../src/provisioner/provisioner.js';
import { HistoryBucket, NodeHistory } from '../../../src/provisioner/history/index.js';
import type { HostJob, HostResult } from '../../../src/host/types.js';
import {
  addElectionBucket,
  CHORIA_BROKER_LOGINS,
  startNatsServer,
  type RunningNatsServer,
} from '@choria-provisioner/test-support/nats-server';
import { testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { until } from '@choria-provisioner/test-support/wait';
import { captureLogger } from '../../choria/support/logger.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function server(opts: { jetstream: boolean; port?: number }): Promise<RunningNatsServer> {
  const s = await startNatsServer(opts);
  cleanups.push(() => s.stop());
  return s;
}

function provisioner(
  url: string,
  runner: (job: HostJob) => Promise<HostResult>,
  extra: { dryRun?: boolean; yaml?: string } = {},
) {
  const log = captureLogger('info');
  const config = testConfig(`workers: 2\nhistory_bucket: HIST\n${extra.yaml ?? ''}`);
  const p = new Provisioner({
    config,
    choria: testSettings(url, config),
    logger: log.logger,
    hostRunner: runner,
    helper: () => ({}),
    stopTimeoutMs: 2000,
    historyRetryMs: 300,
    ...(extra.dryRun === true ? { dryRun: true } : {}),
  });
  cleanups.push(() => p.stop());
  return { p, log };
}

async function bucketKeys(nc: NatsConnection): Promise<string[]> {
  const kv = await nc.jetstream().views.kv('HIST', { bindOnly: true });
  const keys: string[] = [];
  for await (const k of await kv.keys()) keys.push(k);
  return keys.sort();
}

describe('Provisioner node history', () => {
  it('says once that the history is in memory, then moves to the bucket when it can be reached, writing what it kept', async () => {
    const plain = await server({ jetstream: false });
    const { p, log } = provisioner(plain.url, async () => ({ outcome: 'failed', message: 'boom' }));
    await p.start();
    p.offer('n1', 'discovery');
    await until('the attempt', () => p.status().hosts[0]?.state === 'failed');
    await new Promise((r) => setTimeout(r, 1000)); // three more tries of the bucket
    const fallbacks = log.lines.filter((l) => l.includes('Keeping the node history in memory only'));
    expect(fallbacks).toEqual([
      expect.stringMatching(
        /^warn: Keeping the node history in memory only: could not open the history bucket HIST: no JetStream answers under \$JS\.API .*trying the bucket again every 300 ms/,
      ),
    ]);
    expect(p.status().history).toMatchObject({ store: 'memory', nodes: 1, pendingWrites: 1 });

    // the same port, now with JetStream: the connection comes back and the next try binds
    await plain.stop();
    const js = await server({ jetstream: true, port: plain.port });
    await until('the bucket', () => p.status().history.store === 'kv', 15_000);
    await until('the kept record written', () => p.status().history.pendingWrites === 0, 10_000);
    expect(log.lines).toContainEqual(expect.stringMatching(/^warn: The node history bucket HIST is reachable now/));
    expect(p.status().history).not.toHaveProperty('reason');
    const nc = await connect({ servers: js.url });
    cleanups.push(() => nc.close());
    expect(await bucketKeys(nc)).toEqual(['test.n1']);
    // the provisioner before its broker (the cleanups would stop this later server first): nats.js
    // can throw "write after end" when the broker closes a connection that is being closed
    await p.stop();
  }, 40_000);

  it('a dry run leaves a node the site quarantined alone and writes nothing to the bucket', async () => {
    const s = await server({ jetstream: true });
    const nc = await connect({ servers: s.url });
    cleanups.push(() => nc.close());
    // another instance of the site quarantined n1
    const other = new NodeHistory({
      policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 1 },
      instance: 'prov-b',
      ttlMs: 3_600_000,
    });
    const bucket = await HistoryBucket.open({
      nc,
      bucket: 'HIST',
      ttlMs: 3_600_000,
      apiPrefix: '$JS.API',
      site: 'test',
    });
    cleanups.push(async () => bucket.close());
    other.attach(bucket);
    other.attempted('n1', {
      outcome: 'failed',
      message: 'CSR refused',
      at: Date.now(),
      durationMs: 3,
      configured: false,
      discoveredAt: Date.now(),
    });
    await until('the record stored', () => other.pendingWrites === 0);

    const jobs: string[] = [];
    const { p } = provisioner(
      s.url,
      async (job) => {
        jobs.push(job.identity);
        return { outcome: 'dry_run', message: 'dry run: would send choria_provision#configure' };
      },
      { dryRun: true },
    );
    await p.start();
    expect(p.status().history).toMatchObject({ store: 'kv', readOnly: true, nodes: 1 });
    expect(p.offer('n1', 'discovery')).toBe(false);
    expect(p.offer('n2', 'discovery')).toBe(true);
    await until('the dry run of n2', () => jobs.length === 1 && p.status().busyWorkers === 0);
    expect(p.status({ limit: 10 }).hosts.map((x) => [x.identity, x.state, x.instance])).toEqual(
      expect.arrayContaining([
        ['n1', 'quarantined', 'prov-b'],
        ['n2', 'dry_run', 'provisioner.example.net'],
      ]),
    );
    expect(p.release('n1')).toBe(true); // in this process only
    await new Promise((r) => setTimeout(r, 300));
    expect(await bucketKeys(nc)).toEqual(['test.n1']);
    const stored = await (await nc.jetstream().views.kv('HIST', { bindOnly: true })).get('test.n1');
    expect(stored?.json<{ instance: string; quarantinedAt?: string }>()).toMatchObject({
      instance: 'prov-b',
      quarantinedAt: expect.any(String),
    });
  }, 30_000);
});

describe('on a broker with the Choria Broker account layout (no JetStream in the provisioning account)', () => {
  /** The provisioner's settings as `broker_provisioning_password` makes them: it logs in as `provisioner`. */
  const provisionerLogin = (url: string) => {
    const config = testConfig('workers: 2\nhistory_bucket: HIST\n');
    const { user, password } = CHORIA_BROKER_LOGINS.provisioner;
    return { config, choria: { ...testSettings(url, config), natsUser: user, natsPassword: password } };
  };

  it('keeps the history in the choria account over a second connection, says so, and shares it there', async () => {
    const s = await startNatsServer({ choriaAccounts: true });
    cleanups.push(() => s.stop());
    const log = captureLogger('info');
    const { config, choria } = provisionerLogin(s.url);
    const p = new Provisioner({
      config,
      choria,
      logger: log.logger,
      hostRunner: async () => ({ outcome: 'provisioned' }),
      helper: () => ({}),
      stopTimeoutMs: 2000,
    });
    cleanups.push(() => p.stop());
    await p.start();
    expect(p.status().history).toMatchObject({ store: 'kv', bucket: 'HIST', connection: 'choria' });
    expect(log.text()).toMatch(
      /Keeping the node history in the bucket HIST of the choria account \(over a second connection: the provisioner's own account has no JetStream\)/,
    );
    expect(log.text()).not.toMatch(/in memory only/);
    p.offer('n1', 'discovery');
    await until('the attempt', () => p.status().hosts[0]?.state === 'held');
    // the record is in the choria account (where an unauthenticated connection lands) ...
    const choriaNc = await connect({ servers: s.url });
    cleanups.push(() => choriaNc.close());
    await until('the record written', async () => (await bucketKeys(choriaNc)).length === 1);
    // ... and the provisioning account has no JetStream at all
    const { user, password } = CHORIA_BROKER_LOGINS.provisioner;
    const provNc = await connect({ servers: s.url, user, pass: password });
    cleanups.push(() => provNc.close());
    await expect(provNc.jetstreamManager({ timeout: 1000 })).rejects.toThrow();
  });

  it('without the provisioner login (its own connection is the only one) it keeps the history where that connection can', async () => {
    const s = await startNatsServer({ choriaAccounts: true });
    cleanups.push(() => s.stop());
    const { config } = provisionerLogin(s.url);
    const p = new Provisioner({
      config,
      choria: testSettings(s.url, config),
      hostRunner: async () => ({ outcome: 'provisioned' }),
      helper: () => ({}),
      stopTimeoutMs: 2000,
    });
    cleanups.push(() => p.stop());
    await p.start();
    expect(p.status().history).toMatchObject({ store: 'kv', connection: 'provisioner' });
  });

  it('wins the leader election through the two imported election subjects', async () => {
    const s = await startNatsServer({ choriaAccounts: true });
    cleanups.push(() => s.stop());
    await addElectionBucket(s.url); // unauthenticated: in the choria account, as the broker makes it
    const { config: base, choria } = provisionerLogin(s.url);
    const config = testConfig('workers: 2\nhistory_bucket: HIST\nleader_election: true\n');
    expect(base.site).toBe(config.site);
    const p = new Provisioner({
      config,
      choria,
      hostRunner: async () => ({ outcome: 'provisioned' }),
      helper: () => ({}),
      stopTimeoutMs: 2000,
      electionSplayMs: 0,
    });
    cleanups.push(() => p.stop());
    await p.start();
    await until('leader', () => p.isLeader === true, 15_000);
    expect(p.status().history).toMatchObject({ store: 'kv', connection: 'choria' });
  });
});

import { connect, type NatsConnection } from 'nats';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CHORIA_BROKER_LOGINS,
  startNatsServer,
  type RunningNatsServer,
} from '@choria-provisioner/test-support/nats-server';
import { until } from '@choria-provisioner/test-support/wait';
import {
  HistoryBucket,
  HistoryUnavailableError,
  HistoryWriteRefusedError,
  NodeHistory,
  HISTORY_BUCKET_MAX_BYTES,
  encodeRecord,
  historyKey,
  type NodeRecord,
} from '../../../src/provisioner/history/index.js';

const HOUR = 3_600_000;

function record(identity: string, updatedAt: number, extra: Partial<NodeRecord> = {}): NodeRecord {
  return {
    identity,
    firstSeen: updatedAt - 10,
    attempts: 1,
    failures: 1,
    outcome: 'failed',
    error: 'boom',
    instance: 'prov1',
    attemptAt: updatedAt,
    durationMs: 5,
    provisionedAt: undefined,
    notBefore: undefined,
    quarantinedAt: undefined,
    configuredAt: undefined,
    restartSentAt: undefined,
    updatedAt,
    ...extra,
  };
}

describe('HistoryBucket against nats-server', () => {
  const servers: RunningNatsServer[] = [];
  const conns: NatsConnection[] = [];
  const buckets: HistoryBucket[] = [];

  afterEach(async () => {
    for (const b of buckets.splice(0)) b.close();
    for (const c of conns.splice(0)) await c.close().catch(() => undefined);
    for (const s of servers.splice(0)) await s.stop();
  });

  async function server(opts: Parameters<typeof startNatsServer>[0] = {}): Promise<RunningNatsServer> {
    const s = await startNatsServer(opts);
    servers.push(s);
    return s;
  }
  async function conn(s: RunningNatsServer, extra: { user?: string; pass?: string } = {}): Promise<NatsConnection> {
    const nc = await connect({ servers: s.url, maxReconnectAttempts: -1, reconnectTimeWait: 100, ...extra });
    conns.push(nc);
    return nc;
  }
  async function open(nc: NatsConnection, site = 'dc1', ttlMs = 2 * HOUR): Promise<HistoryBucket> {
    const b = await HistoryBucket.open({ nc, bucket: 'HIST', ttlMs, apiPrefix: '$JS.API', site });
    buckets.push(b);
    return b;
  }

  it('creates a bounded bucket once, then uses the existing one as it is', async () => {
    const s = await server();
    const nc = await conn(s);
    const first = await open(nc, 'dc1', 2 * HOUR);
    expect(first.info).toEqual({ bucket: 'HIST', ttlMs: 2 * HOUR, created: true });
    const info = await (await nc.jetstreamManager()).streams.info('KV_HIST');
    expect(info.config).toMatchObject({
      max_msgs_per_subject: 1,
      max_bytes: HISTORY_BUCKET_MAX_BYTES,
      discard: 'old',
      storage: 'file',
      subjects: ['$KV.HIST.>'],
    });
    const second = await open(nc, 'dc1', 5 * HOUR);
    expect(second.info).toEqual({ bucket: 'HIST', ttlMs: 2 * HOUR, created: false });
  });

  it("loads a site's stored records, follows changes, skips other sites and reports garbage and refused identities", async () => {
    const s = await server();
    const writer = await open(await conn(s));
    await writer.write(record('web1.example.net', 1000), 0);
    // as an earlier version wrote an identity the rule refuses
    await (
      await conn(s)
    )
      .jetstream()
      .views.kv('HIST', { bindOnly: true })
      .then((kv) =>
        kv.put(`dc1.=${Buffer.from('odd name').toString('base64url')}`, encodeRecord(record('odd name', 1000))),
      );
    const other = await open(await conn(s), 'dc2');
    await other.write(record('web1.example.net', 1000, { instance: 'other-site' }), 0);
    const js = (await conn(s)).jetstream();
    const kv = await js.views.kv('HIST', { bindOnly: true });
    await kv.put(historyKey('dc1', 'garbage') as string, new TextEncoder().encode('not json'));
    await kv.put(historyKey('dc1', 'liar') as string, encodeRecord(record('someone-else', 1)));
    // an earlier version's form of an identity: not the node's key
    await kv.put(
      `dc1.=${Buffer.from('web3.example.net').toString('base64url')}`,
      encodeRecord(record('web3.example.net', 1)),
    );

    const seen: NodeRecord[] = [];
    const invalid: string[] = [];
    const reader = await open(await conn(s));
    await reader.watch({
      onRecord: (r) => seen.push(r),
      onInvalid: (key, why) => invalid.push(`${key}: ${why}`),
      onRefusedIdentity: (text, why) => invalid.push(`${text}: ${why}`),
    });
    // resolved once the stored ones are in
    // a record whose identity fails the identity rule is refused (a key an earlier version or anyone with access wrote)
    expect(seen.map((r) => r.identity).sort()).toEqual(['web1.example.net']);
    expect(seen.every((r) => r.instance === 'prov1')).toBe(true);
    expect(invalid).toEqual([
      'odd name: it holds U+0020 at position 3: only letters, digits, "-", "_" and dots between labels are allowed',
      expect.stringMatching(/^dc1\.garbage: not JSON/),
      expect.stringMatching(/^dc1\.liar: the record names "someone-else"/),
      expect.stringMatching(/^dc1\.=.*: not the key of web3\.example\.net/),
    ]);
    await writer.write(record('web2.example.net', 2000, { outcome: 'provisioned' }), 0);
    await until('the change to arrive', () => seen.some((r) => r.identity === 'web2.example.net'));
  });

  it('refuses for good a record the broker will never take: no key for its identity, or larger than a value may be', async () => {
    const s = await server();
    const nc = await conn(s);
    const b = await open(nc);
    const statuses: string[] = [];
    void (async () => {
      for await (const st of nc.status()) statuses.push(st.type);
    })();
    await expect(b.write(record('x'.repeat(4100), 1), 0)).rejects.toBeInstanceOf(HistoryWriteRefusedError);
    await expect(b.write(record('a*b', 1), 0)).rejects.toBeInstanceOf(HistoryWriteRefusedError);
    await expect(b.write(record('n1.example.net', 1, { error: 'x'.repeat(10_000) }), 0)).rejects.toThrow(
      /the broker refuses the history record of "n1\.example\.net"/,
    );
    await b.write(record('n1.example.net', 2), 0);
    expect(statuses.filter((t) => t === 'disconnect')).toEqual([]);
  });

  it('says why when the account has no JetStream', async () => {
    const plain = await server({ jetstream: false });
    await expect(
      HistoryBucket.open({ nc: await conn(plain), bucket: 'HIST', ttlMs: HOUR, apiPrefix: '$JS.API', site: 'dc1' }),
    ).rejects.toThrow(
      new HistoryUnavailableError(
        "could not open the history bucket HIST: no JetStream answers under $JS.API for this connection's account (JetStream off, or not given to the account)",
      ),
    );
    // JetStream on, but not for the provisioner's account (as a Choria Broker's provisioning account)
    const accounts = await server({
      config:
        'accounts: { JS: { jetstream: enabled, users: [{ user: js, password: js }] }, PROV: { users: [{ user: prov, password: prov }] } }\n',
    });
    await expect(
      HistoryBucket.open({
        nc: await conn(accounts, { user: 'prov', pass: 'prov' }),
        bucket: 'HIST',
        ttlMs: HOUR,
        apiPrefix: '$JS.API',
        site: 'dc1',
      }),
    ).rejects.toThrow(/no JetStream answers under \$JS\.API/);
  });

  it('a Streams user (no stream creation) is told how to get the bucket made, then uses the one an admin made', async () => {
    const s = await server({ choriaAccounts: true });
    const { user, password } = CHORIA_BROKER_LOGINS.streamsUser;
    const asUser = await conn(s, { user, pass: password });
    await expect(
      HistoryBucket.open({ nc: asUser, bucket: 'HIST', ttlMs: 168 * HOUR, apiPrefix: '$JS.API', site: 'dc1' }),
    ).rejects.toThrow(
      /^could not open the history bucket HIST: this connection may use Choria Streams but not create the bucket \(.*STREAM\.CREATE\.KV_HIST.*\): have a Streams admin create it once, e\.g\. `choria kv add HIST --history 1 --ttl 168h`, or give the provisioner's client JWT --stream-admin$/,
    );
    // an admin (the account's unrestricted default login) makes it; the user binds to it as it is
    await (await conn(s)).jetstreamManager().then((jsm) =>
      jsm.streams.add({
        name: 'KV_HIST',
        subjects: ['$KV.HIST.>'],
        max_msgs_per_subject: 1,
        allow_direct: true,
        allow_rollup_hdrs: true,
      }),
    );
    const b = await open(asUser, 'dc1', 168 * HOUR);
    expect(b.info).toMatchObject({ bucket: 'HIST', created: false });
    const seen: NodeRecord[] = [];
    await b.watch({ onRecord: (r) => seen.push(r), onInvalid: () => undefined, onRefusedIdentity: () => undefined });
    await b.write(record('web1.example.net', 1000), 0);
    await until('its own write to come back through the watch', () =>
      seen.some((r) => r.identity === 'web1.example.net'),
    );
  });

  it('keeps following through a broker restart, and NodeHistory writes what failed meanwhile', async () => {
    const s = await server();
    const seen: NodeRecord[] = [];
    const rewatched: string[] = [];
    const reader = await open(await conn(s));
    await reader.watch({
      onRecord: (r) => seen.push(r),
      onInvalid: () => undefined,
      onRefusedIdentity: () => undefined,
      onRewatch: (err) => rewatched.push(String(err)),
    });
    const errors: unknown[] = [];
    let backAgain = 0;
    const h = new NodeHistory({
      policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0 },
      instance: 'prov1',
      ttlMs: HOUR,
      onWriteError: (e) => errors.push(e),
      onWritten: () => backAgain++,
    });
    h.attach(await open(await conn(s)));
    h.attempted('before', {
      outcome: 'failed',
      message: 'x',
      at: Date.now(),
      durationMs: 1,
      configured: false,
      discoveredAt: Date.now(),
    });
    await until('the first record to be followed', () => seen.some((r) => r.identity === 'before'));

    await s.restart();
    h.attempted('during', {
      outcome: 'failed',
      message: 'x',
      at: Date.now(),
      durationMs: 1,
      configured: false,
      discoveredAt: Date.now(),
    });
    await until('the write to fail or land', () => h.pendingWrites === 0 || errors.length > 0, 15_000);
    await until(
      'the record written after the restart to be followed',
      async () => {
        h.flush();
        return seen.some((r) => r.identity === 'during');
      },
      30_000,
      { stepMs: 250 },
    );
    expect(h.pendingWrites).toBe(0);
    if (errors.length > 0) expect(backAgain).toBe(1);
  }, 60_000);
});

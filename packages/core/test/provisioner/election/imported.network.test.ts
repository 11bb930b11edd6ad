import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { readVector } from '@choria-provisioner/test-support/vectors';
import { LeaderElection } from '../../../src/provisioner/election/election.js';
import { ElectionKvError, bucketTtlMs, create } from '../../../src/provisioner/election/kv-campaign.js';
import { capturingLogger, createElectionStream } from './election-support.js';
import { until } from '@choria-provisioner/test-support/wait';

// election-nats-server.conf reproduces the Choria Broker's choria/provisioning accounts. The harness
// writes its own listen and jetstream lines, so the conf's copies are dropped. The unprefixed
// `$KV.CHORIA_LEADER_ELECTION.provisioner` import is dropped too, so a campaign can only succeed on
// the prefixed subject choria.streams.$KV... that the election is meant to use in imported mode.
function brokerAccountsConfig(): { config: string; provisionerPassword: string; choriaPassword: string } {
  const text = readVector('crypto', 'election-nats-server.conf');
  const config = text
    .split('\n')
    .filter((line) => !/^\s*listen\s*:/.test(line) && !/^\s*jetstream\s*\{/.test(line) && !line.includes('to: "$KV.'))
    .join('\n');
  const password = (user: string): string => {
    const m = new RegExp(`user:\\s*${user}\\s*,\\s*password:\\s*([^\\s}]+)`).exec(text);
    if (m?.[1] === undefined) throw new Error(`election-nats-server.conf has no user ${user}`);
    return m[1];
  };
  return { config, provisionerPassword: password('provisioner'), choriaPassword: password('choria') };
}

describe('LeaderElection through the Choria Streams imports (provisioning account)', () => {
  let server: RunningNatsServer;
  let choria: NatsConnection;
  let prov: NatsConnection;

  beforeAll(async () => {
    const accounts = brokerAccountsConfig();
    expect(accounts.config).toContain('to: "choria.streams.$KV.CHORIA_LEADER_ELECTION.provisioner"');
    expect(accounts.config).not.toContain('to: "$KV.');
    server = await startNatsServer({ config: accounts.config });
    choria = await connect({ servers: server.url, user: 'choria', pass: accounts.choriaPassword });
    prov = await connect({ servers: server.url, user: 'provisioner', pass: accounts.provisionerPassword });
    await createElectionStream(choria);
  });

  afterAll(async () => {
    await prov.close();
    await choria.close();
    await server.stop();
  });

  it('reads the bucket TTL through choria.streams and sees nothing else of JetStream', async () => {
    expect(await bucketTtlMs(prov, { apiPrefix: 'choria.streams' })).toBe(5_000);
    const plain = await create(prov, { apiPrefix: '$JS.API' }, 'x').catch((e: unknown) => e);
    expect((plain as ElectionKvError).kind).toBe('no-responders');
    const other = await create(prov, { apiPrefix: 'choria.streams', key: 'other' }, 'x').catch((e: unknown) => e);
    expect(other).toBeInstanceOf(ElectionKvError);
    expect((other as ElectionKvError).kind).toBe('no-responders');
  });

  it('campaigns and wins with the default api prefix', async () => {
    const won: string[] = [];
    const election = new LeaderElection({
      nc: prov,
      identity: 'prov1.example.net',
      logger: capturingLogger().logger,
      splayMs: 50,
      random: () => 0,
      onWon: () => won.push('won'),
      onLost: () => won.push('lost'),
    });
    election.start();
    try {
      await until('the win', () => won.length > 0, 5_000);
      expect(won).toEqual(['won']);
      expect(election.isLeader).toBe(true);
      // the choria account sees our identity under the key
      const got = await choria.request(
        '$JS.API.DIRECT.GET.KV_CHORIA_LEADER_ELECTION.$KV.CHORIA_LEADER_ELECTION.provisioner',
        new Uint8Array(),
        { timeout: 2_000 },
      );
      expect(new TextDecoder().decode(got.data)).toBe('prov1.example.net');
      const storedSeq = Number(got.headers?.get('Nats-Sequence'));
      expect(storedSeq).toBeGreaterThanOrEqual(2);
      expect(storedSeq).toBeLessThanOrEqual(election.lastSequence ?? 0);
    } finally {
      await election.stop();
    }
  });
});

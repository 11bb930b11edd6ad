import { connect, type NatsConnection } from 'nats';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { LeaderElection, type LeaderElectionOptions } from '../../../src/provisioner/election/election.js';
import { capturingLogger, createElectionStream } from './election-support.js';
import { until } from '@choria-provisioner/test-support/wait';

interface Tracked {
  election: LeaderElection;
  won: number;
  lost: number;
}

describe('LeaderElection against nats-server (plain JetStream, 5 s bucket TTL)', () => {
  let server: RunningNatsServer;
  const conns: NatsConnection[] = [];
  const elections: LeaderElection[] = [];

  beforeEach(async () => {
    server = await startNatsServer();
  });

  afterEach(async () => {
    for (const e of elections.splice(0)) await e.stop();
    for (const c of conns.splice(0)) await c.close();
    await server.stop();
  });

  async function conn(): Promise<NatsConnection> {
    const nc = await connect({ servers: server.url });
    conns.push(nc);
    return nc;
  }

  async function tracked(identity: string, extra: Partial<LeaderElectionOptions> = {}): Promise<Tracked> {
    const t: Tracked = { won: 0, lost: 0 } as Tracked;
    t.election = new LeaderElection({
      nc: await conn(),
      identity,
      apiPrefix: '$JS.API',
      logger: capturingLogger().logger,
      splayMs: 50,
      // the low end of every back-off range keeps the test quick and its timing predictable
      random: () => 0,
      onWon: () => (t.won += 1),
      onLost: () => (t.lost += 1),
      ...extra,
    });
    elections.push(t.election);
    return t;
  }

  it('elects exactly one of two instances and fails over after the leader stops', async () => {
    await createElectionStream(await conn());
    const a = await tracked('prov1.example.net');
    const b = await tracked('prov2.example.net');
    a.election.start();
    b.election.start();

    await until('a leader', () => a.won + b.won > 0, 5_000);
    // give the loser several campaigns to (wrongly) win too
    await new Promise((r) => setTimeout(r, 1_500));
    expect(a.won + b.won).toBe(1);
    const [leader, standby] = a.won === 1 ? [a, b] : [b, a];
    expect(leader.election.isLeader).toBe(true);
    expect(leader.election.state).toBe('leader');
    expect(leader.election.lastSequence).toBeGreaterThan(1);
    expect(standby.election.state).toBe('candidate');
    expect(standby.election.isLeader).toBe(false);
    expect(standby.election.lastSequence).toBeUndefined();

    const stoppedAt = Date.now();
    expect(await leader.election.stop()).toBe(true);
    expect(Date.now() - stoppedAt).toBeLessThan(500);
    expect(leader.election.state).toBe('unknown');
    expect(leader.lost).toBe(0); // like upstream: stop does not report a loss

    const takeover = await until('the standby to take over', () => standby.won > 0, 15_000, { stepMs: 50 });
    // the key outlives the stopped leader by the bucket TTL
    expect(takeover).toBeGreaterThan(3_000);
    expect(takeover).toBeLessThan(15_000);
    await new Promise((r) => setTimeout(r, 800));
    expect(standby.won).toBe(1);
    expect(standby.lost).toBe(0);
    expect(standby.election.isLeader).toBe(true);
  });

  it('logs a missing bucket loudly, keeps retrying and wins once the bucket appears', async () => {
    const { logger, entries } = capturingLogger();
    const a = await tracked('prov1.example.net', { logger });
    a.election.start();

    await until('two logged start failures', () => entries.filter((e) => e.level === 'error').length >= 2, 5_000);
    const errors = entries.filter((e) => e.level === 'error');
    for (const e of errors) {
      expect(e.message).toContain('CHORIA_LEADER_ELECTION');
      expect(e.message).toContain('stream not found');
      expect(e['bucket']).toBe('CHORIA_LEADER_ELECTION');
    }
    expect(errors[0]?.message).toMatch(/^Leader election failed to start \(attempt 1, retrying in 375 ms\)/);
    expect(a.election.state).toBe('unknown');
    expect(a.won).toBe(0);

    await createElectionStream(await conn());
    await until('the election to be won', () => a.won === 1, 8_000);
    expect(a.election.isLeader).toBe(true);
  });

  it('reports a TTL outside 4 s..1 h and keeps retrying until the bucket is fixed', async () => {
    const nc = await conn();
    await createElectionStream(nc, { max_age: 2_000_000_000 });
    const { logger, entries } = capturingLogger();
    const a = await tracked('prov1.example.net', { logger });
    a.election.start();
    await until('a logged TTL problem', () => entries.some((e) => e.level === 'error'), 5_000);
    expect(entries.find((e) => e.level === 'error')?.message).toContain('bucket TTL 2 s');
    expect(a.election.state).toBe('unknown');

    const cfg = {
      name: 'KV_CHORIA_LEADER_ELECTION',
      subjects: ['$KV.CHORIA_LEADER_ELECTION.>'],
      max_age: 5_000_000_000,
      max_msgs_per_subject: 1,
      storage: 'file',
      discard: 'new',
      allow_rollup_hdrs: true,
      deny_delete: true,
      allow_direct: true,
      max_msg_size: 1024,
    };
    const r = await nc.request(
      '$JS.API.STREAM.UPDATE.KV_CHORIA_LEADER_ELECTION',
      new TextEncoder().encode(JSON.stringify(cfg)),
      { timeout: 2_000 },
    );
    expect(new TextDecoder().decode(r.data)).not.toContain('"error"');
    await until('the election to be won', () => a.won === 1, 8_000);
  });

  it('loses leadership when someone else overwrites the key', async () => {
    const nc = await conn();
    await createElectionStream(nc);
    const { logger, entries } = capturingLogger();
    const campaigns: string[] = [];
    const a = await tracked('prov1.example.net', { logger, onCampaign: (s, ok) => campaigns.push(`${s}:${ok}`) });
    a.election.start();
    await until('the win', () => a.won === 1, 5_000);
    expect(campaigns.slice(0, 2)).toEqual(['candidate:true', 'leader:true']);

    // an unconditional write by another party moves the revision under the leader's feet
    const ack = await nc.request(
      '$KV.CHORIA_LEADER_ELECTION.provisioner',
      new TextEncoder().encode('intruder.example.net'),
      { timeout: 2_000 },
    );
    expect(new TextDecoder().decode(ack.data)).toContain('"seq"');

    await until('the loss', () => a.lost === 1, 3_000);
    expect(a.election.state).toBe('candidate');
    expect(a.election.isLeader).toBe(false);
    expect(a.election.lastSequence).toBeUndefined();
    expect(campaigns).toContain('leader:false');
    expect(entries.some((e) => e.level === 'warn' && e.message.includes('wrong last sequence'))).toBe(true);
    // the intruder's key blocks re-election until it expires, so no new win yet
    await new Promise((r) => setTimeout(r, 1_000));
    expect(a.won).toBe(1);
    expect(a.election.state).toBe('candidate');
  });
});

import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { ElectionKvError, bucketTtlMs, create, update } from '../../../src/provisioner/election/kv-campaign.js';
import { createElectionStream } from './election-support.js';

// Plain JetStream account: the API prefix is $JS.API and keys live on $KV.<bucket>.<key>.
const plain = { apiPrefix: '$JS.API' } as const;

async function failure(p: Promise<unknown>): Promise<ElectionKvError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ElectionKvError);
  return err as ElectionKvError;
}

describe('election KV requests against nats-server (plain JetStream)', () => {
  let server: RunningNatsServer;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer();
    nc = await connect({ servers: server.url });
  });

  afterAll(async () => {
    await nc.close();
    await server.stop();
  });

  it('reports a missing bucket as stream not found, naming the bucket', async () => {
    const err = await failure(bucketTtlMs(nc, plain));
    expect(err.kind).toBe('stream-not-found');
    expect(err.errCode).toBe(10059);
    expect(err.message).toContain('election bucket CHORIA_LEADER_ELECTION');
    expect(err.message).toContain('stream not found');
    expect(err.subject).toBe('$JS.API.STREAM.INFO.KV_CHORIA_LEADER_ELECTION');
  });

  it('reports no responders with the Choria Streams hint', async () => {
    const err = await failure(bucketTtlMs(nc, { apiPrefix: 'choria.streams' }));
    expect(err.kind).toBe('no-responders');
    expect(err.message).toContain(
      'no responders: is Choria Streams enabled and the election bucket imported into this account?',
    );
    const w = await failure(create(nc, { apiPrefix: 'choria.streams' }, 'p1'));
    expect(w.kind).toBe('no-responders');
    expect(w.subject).toBe('choria.streams.$KV.CHORIA_LEADER_ELECTION.provisioner');
  });

  it('reports a timeout when nothing answers in time', async () => {
    const sub = nc.subscribe('silent.STREAM.INFO.KV_CHORIA_LEADER_ELECTION');
    try {
      const err = await failure(bucketTtlMs(nc, { apiPrefix: 'silent', timeoutMs: 200 }));
      expect(err.kind).toBe('timeout');
      expect(err.message).toContain('request timed out after 200 ms');
    } finally {
      sub.unsubscribe();
    }
  });

  it('refuses a stream that keeps unlimited messages per subject', async () => {
    await createElectionStream(nc, { name: 'KV_NOTKV', subjects: ['$KV.NOTKV.>'], max_msgs_per_subject: -1 });
    const err = await failure(bucketTtlMs(nc, { ...plain, bucket: 'NOTKV' }));
    expect(err.kind).toBe('invalid-bucket');
    expect(err.message).toContain('max_msgs_per_subject is -1');
  });

  it('reads the TTL and runs the campaign/maintain/stale exchange of election-protocol.json', async () => {
    await createElectionStream(nc);
    expect(await bucketTtlMs(nc, plain)).toBe(5_000);

    const s1 = await create(nc, plain, 'prov1.example.net');
    expect(s1).toBeGreaterThanOrEqual(1);

    const lostCreate = await failure(create(nc, plain, 'prov2.example.net'));
    expect(lostCreate.kind).toBe('api-error');
    expect(lostCreate.message).toContain(`wrong last sequence: ${s1}`);

    const s2 = await update(nc, plain, 'prov1.example.net', s1);
    expect(s2).toBe(s1 + 1);

    const stale = await failure(update(nc, plain, 'prov1.example.net', s1));
    expect(stale.kind).toBe('api-error');
    expect(stale.message).toContain(`wrong last sequence: ${s2}`);

    // the stored value is the identity that won
    const got = await nc.request(
      '$JS.API.DIRECT.GET.KV_CHORIA_LEADER_ELECTION.$KV.CHORIA_LEADER_ELECTION.provisioner',
      new Uint8Array(),
      { timeout: 2_000 },
    );
    expect(new TextDecoder().decode(got.data)).toBe('prov1.example.net');

    await expect(update(nc, plain, 'x', 0)).rejects.toThrow(/invalid last revision 0/);
  });
});

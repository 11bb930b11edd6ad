import { ErrorCode, NatsError, type MsgHdrs, type NatsConnection, type RequestOptions } from 'nats';
import { describe, expect, it } from 'vitest';
import { LeaderElection, type LeaderElectionOptions } from '../../../src/provisioner/election/election.js';
import { capturingLogger } from './election-support.js';
import { until } from '@choria-provisioner/test-support/wait';

type Reply = Record<string, unknown> | 'hang' | 'no-responders';

/** Just enough of NatsConnection.request for the election: a scripted in-memory bucket. */
class FakeBucket {
  seq = 0;
  holder: string | undefined;
  requests: { subject: string; expected: string | undefined }[] = [];
  /** overrides the answer to writes when set */
  writeReply: ((expected: number) => Reply) | undefined;

  connection(): NatsConnection {
    const fake = {
      request: (subject: string, data: Uint8Array, opts: RequestOptions) =>
        this.#answer(subject, new TextDecoder().decode(data), opts.headers),
    };
    return fake as unknown as NatsConnection;
  }

  #answer(subject: string, body: string, hdrs: MsgHdrs | undefined): Promise<{ data: Uint8Array; headers: undefined }> {
    const expectedText = hdrs?.get('Nats-Expected-Last-Subject-Sequence');
    this.requests.push({ subject, expected: expectedText });
    let reply: Reply;
    if (subject.includes('.STREAM.INFO.')) {
      reply = { config: { max_age: 5_000_000_000, max_msgs_per_subject: 1 } };
    } else {
      const expected = Number(expectedText);
      if (this.writeReply !== undefined) reply = this.writeReply(expected);
      else if (expected !== this.seq)
        reply = { error: { code: 400, err_code: 10071, description: `wrong last sequence: ${this.seq}` }, seq: 0 };
      else {
        this.seq += 1;
        this.holder = body;
        reply = { stream: 'KV_CHORIA_LEADER_ELECTION', seq: this.seq };
      }
    }
    if (reply === 'hang') return new Promise(() => undefined);
    if (reply === 'no-responders') return Promise.reject(NatsError.errorForCode(ErrorCode.NoResponders));
    return Promise.resolve({ data: new TextEncoder().encode(JSON.stringify(reply)), headers: undefined });
  }
}

function makeElection(
  bucket: FakeBucket,
  extra: Partial<LeaderElectionOptions> = {},
): { election: LeaderElection; events: string[]; entries: ReturnType<typeof capturingLogger>['entries'] } {
  const events: string[] = [];
  const { logger, entries } = capturingLogger();
  const election = new LeaderElection({
    nc: bucket.connection(),
    identity: 'prov1.example.net',
    logger,
    splayMs: 0,
    random: () => 0,
    onWon: () => events.push('won'),
    onLost: () => events.push('lost'),
    onIntervalChange: (s) => events.push(`interval:${s}`),
    ...extra,
  });
  return { election, events, entries };
}

describe('LeaderElection (scripted bucket)', () => {
  it('campaigns with create (expected 0), then refreshes with the last revision and announces the win once', async () => {
    const bucket = new FakeBucket();
    const { election, events } = makeElection(bucket);
    expect(election.state).toBe('unknown');
    election.start();
    expect(() => election.start()).toThrow(/already started/);
    await until('the win', () => events.includes('won'), 3_000);
    expect(bucket.holder).toBe('prov1.example.net');
    const writes = bucket.requests.filter((r) => r.subject === 'choria.streams.$KV.CHORIA_LEADER_ELECTION.provisioner');
    expect(writes.slice(0, 2).map((w) => w.expected)).toEqual(['0', '1']);
    expect(bucket.requests[0]?.subject).toBe('choria.streams.STREAM.INFO.KV_CHORIA_LEADER_ELECTION');
    // a leader's next campaign comes after TwentySec step 0 (250 ms at the low end)
    expect(events.filter((e) => e.startsWith('interval:'))[0]).toBe('interval:0.25');
    expect(events.filter((e) => e === 'won')).toHaveLength(1);
    expect(await election.stop()).toBe(true);
    expect(election.isLeader).toBe(false);
    expect(events).not.toContain('lost');
  });

  it('grows the candidate interval with every failed create', async () => {
    const bucket = new FakeBucket();
    bucket.seq = 7; // someone else holds the key
    const { election, events } = makeElection(bucket);
    election.start();
    await until('two failed campaigns', () => events.filter((e) => e.startsWith('interval:')).length >= 2, 3_000);
    expect(events.slice(0, 2)).toEqual(['interval:0.375', 'interval:0.5']);
    expect(election.state).toBe('candidate');
    await election.stop();
  });

  it('stops promptly while a request hangs and never announces afterwards', async () => {
    const bucket = new FakeBucket();
    bucket.writeReply = () => 'hang';
    const { election, events } = makeElection(bucket);
    election.start();
    await until('a campaign request', () => bucket.requests.length >= 2, 3_000);
    const t0 = Date.now();
    expect(await election.stop()).toBe(false);
    expect(Date.now() - t0).toBeLessThan(100);
    expect(election.state).toBe('unknown');
    expect(events).toEqual([]);
  });

  it('does not announce a win when stopped during the 200 ms announcement delay', async () => {
    const bucket = new FakeBucket();
    const { election, events } = makeElection(bucket);
    election.start();
    await until('the first refresh', () => bucket.seq >= 2, 3_000);
    expect(await election.stop()).toBe(false);
    await new Promise((r) => setTimeout(r, 300));
    expect(events).not.toContain('won');
  });

  it('reports no loss for a win lost before it was announced, and a loss after an announced one', async () => {
    const bucket = new FakeBucket();
    let failRefresh = true;
    bucket.writeReply = (expected) => {
      if (expected !== 0 && failRefresh)
        return { error: { code: 400, err_code: 10071, description: 'wrong last sequence: 99' } };
      bucket.seq += 1;
      return { stream: 'KV_CHORIA_LEADER_ELECTION', seq: bucket.seq };
    };
    const { election, events, entries } = makeElection(bucket);
    election.start();
    await until('a failed first refresh', () => entries.some((e) => e.level === 'warn'), 3_000);
    expect(events).not.toContain('lost');
    failRefresh = false;
    await until('a win', () => events.includes('won'), 3_000);
    failRefresh = true;
    await until('the loss', () => events.includes('lost'), 3_000);
    expect(election.state).toBe('candidate');
    expect(events.filter((e) => e === 'lost')).toHaveLength(1);
    await election.stop();
  });

  it('stays the leader while refreshes go unanswered for less than the key can live, and says so', async () => {
    // the scripted bucket's TTL is 5 s: a leader may hold on for 3 s after its last good refresh
    const bucket = new FakeBucket();
    let unanswered = false;
    bucket.writeReply = (expected) => {
      if (unanswered) return 'no-responders';
      if (expected !== bucket.seq)
        return { error: { code: 400, err_code: 10071, description: `wrong last sequence: ${bucket.seq}` } };
      bucket.seq += 1;
      return { stream: 'KV_CHORIA_LEADER_ELECTION', seq: bucket.seq };
    };
    const { election, events, entries } = makeElection(bucket);
    election.start();
    await until('a win', () => events.includes('won'), 3_000);
    unanswered = true;
    await until(
      'the hold to be announced',
      () => entries.some((e) => e.level === 'warn' && /still the leader for up to/.test(e.message)),
      3_000,
    );
    await new Promise((r) => setTimeout(r, 1_500));
    expect(events).not.toContain('lost');
    expect(election.isLeader).toBe(true);
    unanswered = false;
    await until(
      'the refresh to get through again',
      () => entries.some((e) => /again: still the leader/.test(e.message)),
      3_000,
    );
    expect(events).not.toContain('lost');
    expect(election.isLeader).toBe(true);
    await election.stop();
  });

  it('loses leadership once unanswered refreshes reach the key TTL less the margin, and at once on a refused write', async () => {
    const bucket = new FakeBucket();
    let mode: 'ok' | 'unanswered' | 'refused' = 'ok';
    bucket.writeReply = (expected) => {
      if (mode === 'unanswered') return 'no-responders';
      if (mode === 'refused' || expected !== bucket.seq)
        return { error: { code: 400, err_code: 10071, description: `wrong last sequence: ${bucket.seq + 7}` } };
      bucket.seq += 1;
      return { stream: 'KV_CHORIA_LEADER_ELECTION', seq: bucket.seq };
    };
    const { election, events } = makeElection(bucket);
    election.start();
    await until('a win', () => events.includes('won'), 3_000);
    mode = 'unanswered';
    const since = performance.now();
    await until('the loss', () => events.includes('lost'), 6_000);
    const heldMs = performance.now() - since;
    // 5 s TTL - 2 s margin, counted from the last good refresh (sent up to ~0.5 s before)
    expect(heldMs).toBeGreaterThan(2_000);
    expect(heldMs).toBeLessThan(3_500);
    // the key has expired by now: the next create wins
    bucket.seq = 0;
    mode = 'ok';
    await until('a new win', () => events.filter((e) => e === 'won').length === 2, 5_000);
    mode = 'refused';
    const refusedAt = performance.now();
    await until('the second loss', () => events.filter((e) => e === 'lost').length === 2, 3_000);
    expect(performance.now() - refusedAt).toBeLessThan(1_500);
    await election.stop();
  });

  it('survives a throwing callback', async () => {
    const bucket = new FakeBucket();
    const { election, entries } = makeElection(bucket, {
      onWon: () => {
        throw new Error('boom');
      },
    });
    election.start();
    await until(
      'the logged callback failure',
      () => entries.some((e) => e.message.includes('onWon callback failed: boom')),
      3_000,
    );
    const seq = bucket.seq;
    await until('further refreshes', () => bucket.seq > seq + 1, 3_000);
    expect(election.isLeader).toBe(true);
    await election.stop();
  });

  it('validates its options', () => {
    const nc = new FakeBucket().connection();
    const base = { nc, logger: capturingLogger().logger, onWon: () => undefined, onLost: () => undefined };
    expect(() => new LeaderElection({ ...base, identity: ' ' })).toThrow(/non-empty identity/);
    expect(() => new LeaderElection({ ...base, identity: 'p', splayMs: -1 })).toThrow(/splay/);
  });
});

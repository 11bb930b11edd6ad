// Membership against a real nats-server: members find each other, agree on every node's owner,
// notice a leave at once and a silent death within a few heartbeats, pass on finished nodes, and go
// lock-only when the broker denies the subjects.
import { connect, type NatsConnection } from 'nats';
import { nodeIdentity as id } from '../../../src/choria/identity.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CHORIA_BROKER_LOGINS,
  startNatsServer,
  type RunningNatsServer,
} from '@choria-provisioner/test-support/nats-server';
import { sleep, until } from '@choria-provisioner/test-support/wait';
import {
  Membership,
  MEMBER_TIMEOUT_HEARTBEATS,
  type MembershipOptions,
} from '../../../src/provisioner/coordination/membership.js';
import { captureLogger, type CapturedLog } from '../../choria/support/logger.js';

const HEARTBEAT_MS = 100;
const nodes = Array.from({ length: 300 }, (_, i) => `node-${i}.example.net`);

interface Member {
  m: Membership;
  nc: NatsConnection;
  log: CapturedLog;
  changes: number;
  done: string[];
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function server(config?: string): Promise<RunningNatsServer> {
  const s = await startNatsServer({ jetstream: false, ...(config !== undefined ? { config } : {}) });
  cleanups.push(() => s.stop());
  return s;
}

async function member(
  url: string,
  instance: string,
  extra: Partial<MembershipOptions> & { user?: string; pass?: string } = {},
): Promise<Member> {
  const nc = await connect({
    servers: url,
    ...(extra.user !== undefined ? { user: extra.user, pass: extra.pass } : {}),
  });
  cleanups.push(() => nc.close());
  const log = captureLogger();
  const t: Member = { nc, log, changes: 0, done: [] } as unknown as Member;
  t.m = new Membership({
    nc,
    group: 'lon',
    instance,
    heartbeatMs: HEARTBEAT_MS,
    logger: log.logger,
    version: 'test',
    report: () => ({ owned: 7, provisioned: 3, queued: 0 }),
    onChange: () => t.changes++,
    onDone: (n) => t.done.push(...n),
    ...extra,
  });
  cleanups.push(() => t.m.stop());
  t.m.start();
  return t;
}

const ownedBy = (t: Member): string[] => nodes.filter((n) => t.m.owns(n));

describe('active/active membership', () => {
  it('forms, agrees on owners, splits the fleet and reports every member', async () => {
    const s = await server();
    const all = await Promise.all(['a', 'b', 'c'].map((x) => member(s.url, `prov-${x}.example.net`)));
    await until('three members everywhere', () => all.every((t) => t.m.ready && t.m.members().length === 3));
    expect(all.every((t) => t.m.state === 'formed')).toBe(true);
    const shares = all.map(ownedBy);
    expect(shares.flat().sort()).toEqual([...nodes].sort()); // every node exactly once
    for (const share of shares) expect(share.length).toBeGreaterThan(60);
    for (const n of nodes.slice(0, 50)) expect(new Set(all.map((t) => t.m.ownerOf(n))).size).toBe(1);
    const view = all[0]!.m.view();
    expect(view.members.map((v) => [v.instance, v.self, v.owned, v.provisioned])).toEqual([
      ['prov-a.example.net', true, 7, 3],
      ['prov-b.example.net', false, 7, 3],
      ['prov-c.example.net', false, 7, 3],
    ]);
    expect(all[0]!.log.text()).toMatch(
      /Active\/active member prov-b.example.net \(process [0-9a-f]{16}\) joined group "lon"/,
    );
  });

  it('owns nothing until settled, so a starting instance does not grab the whole fleet', async () => {
    const s = await server();
    const a = await member(s.url, 'prov-a.example.net');
    expect(a.m.ready).toBe(false);
    expect(a.m.owns(nodes[0]!)).toBe(false);
    await a.m.whenReady();
    expect(ownedBy(a)).toHaveLength(nodes.length);
  });

  it('a newcomer knows every live member when it settles, within a round trip rather than a heartbeat', async () => {
    const s = await server();
    const slow = { heartbeatMs: 2_000 };
    const [a, b] = await Promise.all(['a', 'b'].map((x) => member(s.url, `prov-${x}.example.net`, slow)));
    await until('a and b formed together', () => [a, b].every((t) => t!.m.ready && t!.m.members().length === 2), 5_000);
    const started = Date.now();
    const c = await member(s.url, 'prov-c.example.net', slow);
    await c.m.whenReady();
    const took = Date.now() - started;
    // the others answered its first heartbeat at once; it did not wait for their next ones
    expect(c.m.members()).toHaveLength(3);
    expect(took).toBeLessThan(1_000);
    for (const t of [a!, b!]) expect(t.m.members()).toHaveLength(3);
    expect(ownedBy(c).length).toBeLessThan(nodes.length / 2);
  });

  it('takes over at once after a leave and within a few heartbeats after a silent death', async () => {
    const s = await server();
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((x) => member(s.url, `prov-${x}.example.net`)));
    await until('formed', () => [a, b, c].every((t) => t!.m.ready && t!.m.members().length === 3));
    await b!.m.stop();
    await until('b gone at once', () => a!.m.members().length === 2 && c!.m.members().length === 2, 2 * HEARTBEAT_MS);
    expect(a!.log.text()).toMatch(/member prov-b.example.net \(process [0-9a-f]{16}\) left group "lon"/);

    // c dies without a word: its connection closes, so no leaving heartbeat can follow
    const died = Date.now();
    await c!.nc.close();
    await until('c expired', () => a!.m.members().length === 1, 10 * HEARTBEAT_MS);
    const took = Date.now() - died;
    expect(took).toBeGreaterThanOrEqual(MEMBER_TIMEOUT_HEARTBEATS * HEARTBEAT_MS - HEARTBEAT_MS);
    expect(took).toBeLessThan((MEMBER_TIMEOUT_HEARTBEATS + 3) * HEARTBEAT_MS);
    expect(ownedBy(a!)).toHaveLength(nodes.length);
    expect(a!.log.text()).toMatch(
      /member prov-c.example.net \(process [0-9a-f]{16}\) of group "lon" was not heard for \d+ ms, taking over its share/,
    );
  });

  it('passes finished nodes to the others in batches', async () => {
    const s = await server();
    const [a, b] = await Promise.all(['a', 'b'].map((x) => member(s.url, `prov-${x}.example.net`)));
    await until('formed', () => a!.m.ready && b!.m.ready && a!.m.members().length === 2);
    // more than one batch (500) and a partial one sent by the timer
    const finished = Array.from({ length: 700 }, (_, i) => id(`done-${i}.example.net`));
    for (const n of finished) a!.m.announceDone(n);
    await until('b heard of them', () => b!.done.length === finished.length);
    expect(b!.done).toEqual(finished);
    expect(a!.done).toEqual([]); // not told of its own
  });

  it('two processes with one identity are two members that split the fleet, with a warning', async () => {
    const s = await server();
    const [a, b] = await Promise.all([member(s.url, 'prov-a.example.net'), member(s.url, 'prov-a.example.net')]);
    await until('the duplicate is reported', () =>
      /Another process announces itself as prov-a.example.net/.test(a!.log.text()),
    );
    await until(
      'two members each',
      () => a!.m.ready && b!.m.ready && a!.m.members().length === 2 && b!.m.members().length === 2,
    );
    expect(a!.m.members()).toEqual(b!.m.members());
    expect(a!.m.member).not.toBe(b!.m.member);
    // every node has exactly one owner, and both own a share
    const mineA = ownedBy(a!);
    const mineB = ownedBy(b!);
    expect(mineA.length + mineB.length).toBe(nodes.length);
    expect(mineA.filter((n) => mineB.includes(n))).toEqual([]);
    expect(mineA.length).toBeGreaterThan(0);
    expect(mineB.length).toBeGreaterThan(0);
    // one's finished nodes reach the other, though they share an identity
    a!.m.announceDone(id('twin-done.example.net'));
    await until('b heard it', () => b!.done.includes('twin-done.example.net'));
    expect(a!.done).toEqual([]);
    expect(b!.m.view().members.map((m) => m.instance)).toEqual(['prov-a.example.net', 'prov-a.example.net']);
  });

  it('goes lock-only, once and loudly, when the broker denies the subjects', async () => {
    const s = await server(
      [
        'authorization {',
        '  users: [',
        '    { user: provisioner, password: pw, permissions: { publish: { deny: ["provisioning.coordination.>"] }, subscribe: { deny: ["provisioning.coordination.>"] } } }',
        '  ]',
        '}',
      ].join('\n'),
    );
    const a = await member(s.url, 'prov-a.example.net', { user: 'provisioner', pass: 'pw' });
    await a.m.whenReady();
    expect(a.m.state).toBe('unavailable');
    expect(ownedBy(a)).toHaveLength(nodes.length);
    await sleep(5 * HEARTBEAT_MS);
    const warnings = a.log.lines.filter(
      (l) => l.startsWith('warn:') && l.includes('is unavailable, continuing lock-only'),
    );
    expect(warnings).toHaveLength(1);
    a.m.announceDone(id('x')); // nothing to send to
  });

  it('drops garbage on its subjects and carries on', async () => {
    const s = await server();
    const invalid: string[] = [];
    const a = await member(s.url, 'prov-a.example.net', { onInvalid: (r) => invalid.push(r) });
    await a.m.whenReady();
    a.nc.publish(a.m.subjects.members, 'not json');
    a.nc.publish(
      a.m.subjects.done,
      JSON.stringify({ protocol: 'choria-provisioner:done:1', instance: 'x', nodes: [1] }),
    );
    a.nc.publish(
      a.m.subjects.done,
      JSON.stringify({ protocol: 'choria-provisioner:done:1', instance: 'x', nodes: ['ok.example.net', 'a b'] }),
    );
    await until('all reported', () => invalid.length === 3);
    expect(invalid[0]).toMatch(/^heartbeat: not JSON/);
    expect(invalid[1]).toMatch(/^done notice: nodes\[0\] must be a node identity \(a string\)/);
    // a peer's message naming an identity that fails the identity rule is refused whole
    expect(invalid[2]).toMatch(/^done notice: nodes\[1\] is not a node identity: it holds U\+0020/);
    expect(a.m.members()).toEqual([a.m.member]);
  });

  it('forms in the provisioning account of a broker with the Choria Broker account layout', async () => {
    const s = await startNatsServer({ choriaAccounts: true });
    cleanups.push(() => s.stop());
    const { user, password } = CHORIA_BROKER_LOGINS.provisioner;
    const [a, b] = await Promise.all(
      ['a', 'b'].map((x) => member(s.url, `prov-${x}.example.net`, { user, pass: password })),
    );
    // both views must hold both members before the split can be checked: each hears the other in turn
    await until('two members each', () =>
      [a!, b!].every((t) => t.m.state === 'formed' && t.m.ready && t.m.members().length === 2),
    );
    expect(ownedBy(a!).length + ownedBy(b!).length).toBe(nodes.length);
  });

  it('carries asks and grants of queued nodes between two processes, also in the Choria Broker account layout', async () => {
    const s = await startNatsServer({ choriaAccounts: true });
    cleanups.push(() => s.stop());
    const { user, password } = CHORIA_BROKER_LOGINS.provisioner;
    const asks: [string, number][] = [];
    const grants: [string, unknown][] = [];
    const a = await member(s.url, 'prov-a.example.net', {
      user,
      pass: password,
      report: () => ({ owned: 30, provisioned: 0, queued: 24 }),
      onAsk: (from, want) => asks.push([from, want]),
    });
    const b = await member(s.url, 'prov-b.example.net', {
      user,
      pass: password,
      onGrant: (from, granted) => grants.push([from, granted]),
    });
    await until('two members each', () => [a, b].every((t) => t.m.ready && t.m.members().length === 2));
    // b learns a's queue from a's heartbeats; b reports none queued
    await until('b knows a is the busiest', () => b.m.busiest()?.member === a.m.member);
    expect(b.m.busiest()).toEqual({ member: a.m.member, queued: 24 });
    expect(a.m.busiest()).toBeUndefined();
    expect(b.m.view().members.find((m) => !m.self)?.queued).toBe(24);

    expect(b.m.ask(a.m.member, 8)).toBe(true);
    await until('a heard the ask', () => asks.length === 1);
    expect(asks).toEqual([[b.m.member, 8]]);
    expect(
      a.m.grant(b.m.member, [
        { identity: id('n1.example.net'), reportedVersion: '0.30.2' },
        { identity: id('n2.example.net') },
      ]),
    ).toBe(true);
    await until('b heard the grant', () => grants.length === 1);
    expect(grants).toEqual([
      [a.m.member, [{ identity: 'n1.example.net', reportedVersion: '0.30.2' }, { identity: 'n2.example.net' }]],
    ]);
    // only live members are asked
    expect(b.m.ask('prov-z.example.net#00', 1)).toBe(false);
  });

  it('a grant the taker heard is confirmed by its receipt; one no taker answers is reported unconfirmed', async () => {
    const s = await startNatsServer({ choriaAccounts: true });
    cleanups.push(() => s.stop());
    const { user, password } = CHORIA_BROKER_LOGINS.provisioner;
    const grants: unknown[] = [];
    const a = await member(s.url, 'prov-a.example.net', { user, pass: password });
    const b = await member(s.url, 'prov-b.example.net', {
      user,
      pass: password,
      onGrant: (_from, granted) => grants.push(granted),
    });
    await until('two members each', () => [a, b].every((t) => t.m.ready && t.m.members().length === 2));
    const unconfirmed: string[] = [];
    const node = [{ identity: id('n1.example.net') }];
    expect(a.m.grant(b.m.member, node, (why) => unconfirmed.push(why))).toBe(true);
    await until('b heard the grant', () => grants.length === 1);
    // well past the receipt timeout (two heartbeats): the receipt came, nothing is unconfirmed
    await sleep(5 * HEARTBEAT_MS);
    expect(unconfirmed).toEqual([]);

    // b's process stops listening on its work subject without leaving (as across a broker restart,
    // before it subscribed again): a is told, with the reason, and b never sees the grant
    await b.nc.close();
    expect(a.m.grant(b.m.member, node, (why) => unconfirmed.push(why))).toBe(true);
    await until('the grant is reported unconfirmed', () => unconfirmed.length === 1);
    expect(unconfirmed[0]).toMatch(/^no receipt from prov-b\.example\.net \(process [0-9a-f]{16}\) within 200 ms: /);
    expect(grants).toHaveLength(1);
  });

  it('a member without the hand-over sends no receipt for a grant it ignores', async () => {
    const s = await server();
    const a = await member(s.url, 'prov-a.example.net');
    // b listens on its work subject for busy notices only
    const b = await member(s.url, 'prov-b.example.net', { onBusy: () => undefined });
    await until('two members each', () => [a, b].every((t) => t.m.ready && t.m.members().length === 2));
    const unconfirmed: string[] = [];
    expect(a.m.grant(b.m.member, [{ identity: id('n1.example.net') }], (why) => unconfirmed.push(why))).toBe(true);
    await until('the grant is reported unconfirmed', () => unconfirmed.length === 1);
    expect(unconfirmed[0]).toContain('no receipt from prov-b.example.net');
  });
});

// The hand-over of queued nodes between active/active members, with a scripted membership: who is
// asked and for how much, what is handed over (queued nodes only, from the end of the queue, at
// most half), and how the share bends while a hand-over stands (WorkPolicy).
import { nodeIdentity as id } from '../../src/choria/identity.js';
import { describe, expect, it } from 'vitest';
import { ActiveList, type DiscoverySource } from '../../src/provisioner/active-list.js';
import type { GrantedNode, Membership, MembershipState } from '../../src/provisioner/coordination/index.js';
import {
  ASK_PER_WORKER,
  WorkHandover,
  type HandoverMembership,
  type TakenHow,
} from '../../src/provisioner/work-handover.js';
import { HANDOVER_TTL_MS, WorkPolicy } from '../../src/provisioner/work-policy.js';
import { silentLogger } from '../../src/util/logger.js';

const SELF = 'a.example.net#01';
const PEER = 'b.example.net#02';
const OTHER = 'c.example.net#03';

/** A membership where this instance owns every node by rendezvous hashing (so only hand-overs change mayWork). */
class FakeMembership implements HandoverMembership {
  state: MembershipState = 'formed';
  ready = true;
  readonly member = SELF;
  live = [SELF, PEER, OTHER];
  peerQueues = new Map<string, number>();
  asks: [string, number][] = [];
  grants: [string, readonly GrantedNode[]][] = [];
  /** the unconfirmed callback of each grant, in order */
  unconfirmed: ((why: string) => void)[] = [];
  members(): readonly string[] {
    return this.live;
  }
  busiest(): { member: string; queued: number } | undefined {
    let best: { member: string; queued: number } | undefined;
    for (const [member, queued] of this.peerQueues) if (queued > (best?.queued ?? 0)) best = { member, queued };
    return best;
  }
  ask(member: string, want: number): boolean {
    if (!this.live.includes(member)) return false;
    this.asks.push([member, want]);
    return true;
  }
  failGrants = false;
  grant(member: string, nodes: readonly GrantedNode[], unconfirmed?: (why: string) => void): boolean {
    if (!this.live.includes(member) || this.failGrants) return false;
    this.grants.push([member, nodes]);
    if (unconfirmed !== undefined) this.unconfirmed.push(unconfirmed);
    return true;
  }
  owns(): boolean {
    return this.state === 'unavailable' || this.ready;
  }
}

function setup(opts: { idle?: boolean; workers?: number } = {}) {
  const membership = new FakeMembership();
  const policy = new WorkPolicy(1000);
  policy.follow(membership as unknown as Membership);
  const list = new ActiveList({ holdMs: 60_000, lockRetryMs: 120_000 });
  let now = 1_000_000;
  const taken: [string, DiscoverySource, string | undefined, TakenHow][] = [];
  const moved = { given: 0, taken: 0 };
  const handover = new WorkHandover({
    membership,
    list,
    policy,
    logger: silentLogger(),
    workers: opts.workers ?? 4,
    askTimeoutMs: 500,
    idle: () => opts.idle ?? true,
    take: (identity, source, version, how) => {
      taken.push([identity, source, version, how]);
      return list.offer(identity, source, now, 60_000, 0, version).result === 'added';
    },
    listChanged: () => undefined,
    moved: (direction, n) => (moved[direction] += n),
    now: () => now,
  });
  return { membership, policy, list, handover, taken, moved, tick: (ms: number) => (now += ms), now: () => now };
}

describe('WorkHandover', () => {
  it('asks the member with the longest queue for half of it, at most four per worker, and waits for the answer', () => {
    const t = setup({ workers: 2 });
    t.membership.peerQueues.set(PEER, 30).set(OTHER, 7);
    t.handover.maybeAsk();
    expect(t.membership.asks).toEqual([[PEER, 2 * ASK_PER_WORKER]]);
    t.handover.maybeAsk(); // the ask is in flight
    expect(t.membership.asks).toHaveLength(1);
    t.tick(600); // unanswered for longer than the ask timeout: ask again, whoever is busiest now
    t.membership.peerQueues.set(PEER, 5);
    t.handover.maybeAsk();
    expect(t.membership.asks).toEqual([
      [PEER, 8],
      [OTHER, 4],
    ]);
  });

  it('does not ask while busy, before the membership is formed, or a member with almost nothing queued', () => {
    const busy = setup({ idle: false });
    busy.membership.peerQueues.set(PEER, 30);
    busy.handover.maybeAsk();
    expect(busy.membership.asks).toEqual([]);

    const forming = setup();
    forming.membership.peerQueues.set(PEER, 30);
    forming.membership.state = 'forming';
    forming.handover.maybeAsk();
    forming.membership.state = 'unavailable';
    forming.handover.maybeAsk();
    expect(forming.membership.asks).toEqual([]);

    const little = setup();
    little.membership.peerQueues.set(PEER, 1);
    little.handover.maybeAsk();
    expect(little.membership.asks).toEqual([]);
  });

  it('hands over at most half of its queued nodes, from the end of the queue, and none in flight, held or locked', () => {
    const t = setup();
    const entries = Array.from(
      { length: 10 },
      (_, i) => t.list.offer(id(`n${i}`), 'discovery', t.now(), 60_000, 0, i === 9 ? '0.30.2' : undefined).entry,
    );
    t.list.startAttempt(entries[0]!, t.now()); // in flight
    t.list.startAttempt(entries[8]!, t.now()); // in flight, near the end
    // 8 queued: n1..n7, n9; half is 4, the asker wants 6
    t.handover.answer(PEER, 6);
    expect(t.membership.grants).toEqual([
      [
        PEER,
        [{ identity: 'n5' }, { identity: 'n6' }, { identity: 'n7' }, { identity: 'n9', reportedVersion: '0.30.2' }],
      ],
    ]);
    expect([...t.list.entries()].map((e) => e.identity)).toEqual(['n0', 'n1', 'n2', 'n3', 'n4', 'n8']);
    for (const n of ['n5', 'n6', 'n7', 'n9']) expect(t.policy.mayWork(n)).toBe(false);
    expect(t.policy.mayWork('n4')).toBe(true);
    // kept as foreign, to come back if the taker leaves
    expect(t.policy.foreignCount).toBe(4);
    expect(t.moved).toEqual({ given: 4, taken: 0 });
  });

  it('does not pass on nodes it was handed itself', () => {
    const t = setup();
    for (let i = 0; i < 4; i++) t.list.offer(id(`own${i}`), 'discovery', t.now(), 60_000);
    t.handover.received(OTHER, [
      { identity: id('g1') },
      { identity: id('g2') },
      { identity: id('g3') },
      { identity: id('g4') },
    ]);
    // 8 queued, 4 of them granted by OTHER: only its own 4 count, half of them go, from the end
    t.handover.answer(PEER, 8);
    expect(t.membership.grants).toEqual([[PEER, [{ identity: 'own2' }, { identity: 'own3' }]]]);
    expect(['g1', 'g2', 'g3', 'g4'].every((g) => t.list.get(g)?.state === 'queued')).toBe(true);
  });

  it('answers an ask with nothing to spare with an empty grant, and ignores one from a non-member', () => {
    const t = setup();
    t.list.offer(id('only'), 'discovery', t.now(), 60_000);
    t.handover.answer(PEER, 4);
    expect(t.membership.grants).toEqual([[PEER, []]]);
    t.handover.answer('z.example.net#09', 4);
    t.handover.answer(SELF, 4);
    expect(t.membership.grants).toHaveLength(1);
    expect(t.list.get('only')?.state).toBe('queued');
  });

  it('takes granted nodes as its own, and an empty grant holds the next ask back', () => {
    const t = setup();
    t.policy.noteForeign(id('g1'), 'event', t.now(), '0.30.1');
    t.membership.peerQueues.set(PEER, 10);
    t.handover.maybeAsk();
    t.handover.received(PEER, [{ identity: id('g1'), reportedVersion: '0.30.2' }, { identity: id('g2') }]);
    expect(t.taken).toEqual([
      ['g1', 'discovery', '0.30.2', 'granted'],
      ['g2', 'discovery', undefined, 'granted'],
    ]);
    expect(t.policy.foreignCount).toBe(0);
    expect(t.policy.handovers).toEqual({ granted: 2, handed: 0 });
    expect(t.moved).toEqual({ given: 0, taken: 2 });
    // answered: the next ask may go at once
    t.handover.maybeAsk();
    expect(t.membership.asks).toHaveLength(2);
    t.handover.received(PEER, []);
    t.handover.maybeAsk();
    expect(t.membership.asks).toHaveLength(2);
  });

  it('takes back into its own queue the nodes of a grant the taker did not confirm, unless that hand-over ended', () => {
    const t = setup();
    for (let i = 0; i < 6; i++) t.list.offer(id(`n${i}`), 'event', t.now(), 60_000, 0, i === 5 ? '0.30.2' : undefined);
    t.handover.answer(PEER, 6);
    expect(t.membership.grants).toEqual([
      [PEER, [{ identity: 'n3' }, { identity: 'n4' }, { identity: 'n5', reportedVersion: '0.30.2' }]],
    ]);
    expect(t.list.get('n3')).toBeUndefined();
    // the taker finished n4 meanwhile (its done notice came): that hand-over is over
    t.policy.forgetHandover('n4');
    t.membership.unconfirmed[0]!('no receipt from b within 200 ms');
    expect(t.taken).toEqual([
      ['n3', 'event', undefined, 'taken-back'],
      ['n5', 'event', '0.30.2', 'taken-back'],
    ]);
    expect(t.list.get('n3')?.state).toBe('queued');
    expect(t.list.get('n4')).toBeUndefined();
    expect(t.policy.mayWork('n3')).toBe(true);
    expect(t.policy.handovers).toEqual({ granted: 0, handed: 0 });
    // a second report of the same grant takes nothing twice
    t.membership.unconfirmed[0]!('again');
    expect(t.taken).toHaveLength(2);
  });

  it('keeps what it was about to hand over when the grant cannot be sent', () => {
    const t = setup();
    for (let i = 0; i < 6; i++) t.list.offer(id(`n${i}`), 'discovery', t.now(), 60_000);
    t.membership.failGrants = true;
    t.handover.answer(PEER, 4);
    expect(t.membership.grants).toEqual([]);
    expect(t.policy.handovers.handed).toBe(0);
    expect(t.policy.foreignCount).toBe(0);
    expect([...t.list.entries()].map((e) => [e.identity, e.state])).toEqual(
      ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'].map((n) => [n, 'queued']),
    );
  });
});

describe('WorkPolicy with hand-overs', () => {
  it('a granted node is ours and a handed one is not, while the membership is formed', () => {
    const t = setup();
    t.membership.ready = false; // rendezvous hashing gives this instance nothing
    t.policy.granted('g', t.now());
    t.policy.handedTo('h', PEER, t.now());
    expect(t.policy.mayWork('g')).toBe(true);
    expect(t.policy.mayWork('x')).toBe(false);
    t.membership.ready = true;
    expect(t.policy.mayWork('h')).toBe(false);
    // lock-only: every node, hand-overs or not
    t.membership.state = 'unavailable';
    expect(t.policy.mayWork('h')).toBe(true);
  });

  it('ends a hand-over when the node is finished, the taker leaves, or it expires', () => {
    const t = setup();
    t.policy.handedTo('done', PEER, t.now());
    t.policy.handedTo('left', OTHER, t.now());
    t.policy.handedTo('old', PEER, t.now());
    t.policy.forgetHandover('done');
    expect(t.policy.mayWork('done')).toBe(true);
    t.policy.membersChanged([SELF, PEER]);
    expect(t.policy.mayWork('left')).toBe(true);
    expect(t.policy.mayWork('old')).toBe(false);
    t.policy.expireHandovers(t.now() + HANDOVER_TTL_MS + 1);
    expect(t.policy.mayWork('old')).toBe(true);
    expect(t.policy.handovers).toEqual({ granted: 0, handed: 0 });
  });
});

describe('WorkPolicy: how a discovery offers what it finds', () => {
  it('one node at a time as the replies arrive, except lock-only, where every instance shuffles the whole list', () => {
    expect(new WorkPolicy(10).offersAsFound).toBe(true);
    const t = setup();
    expect(t.policy.offersAsFound).toBe(true);
    t.membership.state = 'unavailable';
    expect(t.policy.offersAsFound).toBe(false);
    const found = Array.from({ length: 50 }, (_, i) => `n${i}`);
    const ordered = t.policy.order([...found]);
    expect([...ordered].sort()).toEqual([...found].sort());
    expect(ordered).not.toEqual(found); // 1 in 50! to fail by chance
  });
});

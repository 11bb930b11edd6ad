// Active/active membership: every instance of a group announces itself on one subject and keeps the
// list of members it heard within the last few heartbeats. Nodes belong to members by rendezvous
// hashing over that list (rendezvous.ts), so instances that hear the same members agree on every
// node's owner without talking about nodes at all. Finished nodes are announced in batches so the
// others can forget them (a node restarted into its new configuration is no one's to take over).
//
// The membership is "formed" once this instance hears its own heartbeat come back from the broker.
// A member that hears a process it does not know yet answers with a heartbeat of its own at once,
// so a newcomer learns every live member within a round trip; it acts on ownership ("settled")
// SETTLE_MS after forming, or at its next heartbeat if that comes first, instead of waiting a whole
// heartbeat interval (2 s by default) for every peer's own schedule.
// When that does not happen within FORMING_HEARTBEATS (the broker denies the subjects, say), the
// membership is "unavailable" and this instance owns every node: the node lock alone keeps
// instances apart (lock-only active/active). Hearing itself later forms it after all.
//
// Members are processes, not identities: each is known by its identity and a random id drawn at
// start (the heartbeat's incarnation). Sites often give every instance the same client
// certificate, hence one identity; keyed by identity alone, two such instances would each see a
// group of one and work the whole fleet. The node lock cannot tell them apart either (it is keyed
// on the caller's identity), so for them the split is the only protection, and it holds.
import type { NodeIdentity } from '../../choria/identity.js';
import { randomBytes } from 'node:crypto';
import type { Msg, NatsConnection, Subscription } from 'nats';
import type { Logger } from 'winston';
import { errorText } from '../../util/values.js';
import {
  coordinationSubjects,
  encodeAsk,
  encodeBusy,
  encodeDone,
  encodeGrant,
  encodeHeartbeat,
  encodeReceipt,
  isReceipt,
  parseDone,
  parseHeartbeat,
  parseWorkMessage,
  type CoordinationSubjects,
  type GrantedNode,
  type Heartbeat,
} from './messages.js';
import { rendezvousOwner } from './rendezvous.js';

export type MembershipState = 'forming' | 'formed' | 'unavailable';

/** A member is gone when it has not been heard for this many of its own heartbeat intervals. */
export const MEMBER_TIMEOUT_HEARTBEATS = 3;
/** How many heartbeats to wait for this instance's own announcement before going lock-only. */
export const FORMING_HEARTBEATS = 3;
/**
 * How long a newly formed member waits for the others' answers to its first heartbeat before it
 * acts on ownership. The answers come within a broker round trip from every member whose event loop
 * is not blocked; one that answers later (or runs a version that does not answer) is taken in at
 * its next heartbeat, like any member that joins.
 */
export const SETTLE_MS = 100;
const DONE_FLUSH_MS = 200;
const DONE_BATCH_MAX = 500;

export interface MemberView {
  /** the member's Choria identity */
  readonly instance: string;
  /** its process: the identity plus a random id drawn at start (what ownership is computed over) */
  readonly member: string;
  readonly self: boolean;
  /** ms since its last heartbeat (0 for this instance) */
  readonly lastSeenMs: number;
  readonly owned: number;
  readonly provisioned: number;
  /** nodes waiting in its work queue, as its last heartbeat said */
  readonly queued: number;
  readonly version: string;
}

export interface MembershipView {
  readonly state: MembershipState;
  readonly group: string;
  readonly instance: string;
  readonly members: readonly MemberView[];
}

export interface MembershipOptions {
  readonly nc: NatsConnection;
  readonly group: string;
  /** this instance's Choria identity */
  readonly instance: string;
  /** this process's random incarnation (default: drawn here); node claims name the member by it */
  readonly incarnation?: string;
  readonly heartbeatMs: number;
  readonly logger: Logger;
  readonly version: string;
  /** what this instance reports about itself in each heartbeat */
  readonly report: () => { owned: number; provisioned: number; queued: number };
  /** the live member list changed (also when the membership formed or became unavailable) */
  readonly onChange: () => void;
  /** another member finished these nodes */
  readonly onDone: (nodes: readonly string[], from: string) => void;
  /**
   * The hand-over of queued nodes (work-handover.ts): a live member asks for up to `want` of this
   * instance's queued nodes, or a member granted some to this instance. Without these handlers
   * (and onBusy) this process does not listen on its work subject.
   */
  readonly onAsk?: (from: string, want: number) => void;
  readonly onGrant?: (from: string, nodes: readonly GrantedNode[]) => void;
  /** a live member is provisioning these nodes, which the membership now gives to this instance */
  readonly onBusy?: (from: string, nodes: readonly string[]) => void;
  /** a coordination message that does not parse */
  readonly onInvalid?: (reason: string) => void;
  /** how long a grant waits for the taker's receipt (default two heartbeats) */
  readonly receiptTimeoutMs?: number;
  readonly now?: () => number;
}

interface Peer {
  heartbeat: Heartbeat;
  seenAt: number;
}

/** How a member is named in the log: its identity, and its process for telling twins apart. */
function label(hb: Heartbeat): string {
  return `${hb.instance} (process ${hb.incarnation})`;
}

/** A member's key: its identity and its process's random id. */
export function memberKey(instance: string, incarnation: string): string {
  return `${instance}#${incarnation}`;
}

/** The incarnation a member key names. */
export function incarnationOf(key: string): string {
  return key.slice(key.lastIndexOf('#') + 1);
}

export class Membership {
  readonly group: string;
  readonly instance: string;
  /** this process's key among the members (memberKey) */
  readonly member: string;
  readonly #opts: MembershipOptions;
  readonly #subjects: CoordinationSubjects;
  readonly #incarnation: string;
  readonly #peers = new Map<string, Peer>();
  readonly #now: () => number;
  readonly #warnedIncarnations = new Set<string>();
  #state: MembershipState = 'forming';
  #settled = false;
  #members: readonly string[];
  #subs: Subscription[] = [];
  #timers: NodeJS.Timeout[] = [];
  #done: NodeIdentity[] = [];
  #doneTimer: NodeJS.Timeout | undefined;
  #readyWaiters: (() => void)[] = [];
  #stopped = false;
  /** when each heartbeat not yet heard back was published (performance.now()), by its seq */
  readonly #unechoed = new Map<number, number>();
  /** the seq of the last heartbeat published */
  #seq = 0;
  /** until when (performance.now()) this member may change nodes: see leaseEndsAt */
  #leaseEnd = 0;
  /** when the heartbeat timer last ran (performance.now()): a long gap means this process was paused */
  #lastTick: number | undefined;

  constructor(opts: MembershipOptions) {
    this.#opts = opts;
    this.group = opts.group;
    this.instance = opts.instance;
    this.#incarnation = opts.incarnation ?? randomBytes(8).toString('hex');
    this.member = memberKey(opts.instance, this.#incarnation);
    this.#subjects = coordinationSubjects(opts.group);
    this.#now = opts.now ?? Date.now;
    this.#members = [this.member];
  }

  get state(): MembershipState {
    return this.#state;
  }

  get subjects(): CoordinationSubjects {
    return this.#subjects;
  }

  /** true once this instance may act on ownership: formed and settled, or unavailable (lock-only) */
  get ready(): boolean {
    return this.#state === 'unavailable' || (this.#state === 'formed' && this.#settled);
  }

  /** Resolves when `ready` (see there) or after stop(). */
  whenReady(): Promise<void> {
    if (this.ready || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  /** The live members' keys (memberKey), sorted; always includes this process. */
  members(): readonly string[] {
    return this.#members;
  }

  /**
   * Until when (performance.now()) this member may change nodes: the others take its share over
   * once they have not heard it for MEMBER_TIMEOUT_HEARTBEATS heartbeats, counted from when its
   * heartbeat reached them, so its right lasts that long from when it published the last heartbeat
   * it heard back itself, less half a heartbeat for delivery. Lock-only (unavailable): no end, the
   * node lock keeps the instances apart. Before the first echo, and after stop(), what it was.
   */
  leaseEndsAt(): number {
    return this.#state === 'unavailable' ? Infinity : this.#leaseEnd;
  }

  /** Whether this instance should provision `node` now. Lock-only (unavailable): every node. */
  owns(node: string): boolean {
    if (this.#state === 'unavailable') return true;
    if (!this.ready) return false;
    return this.#members.length === 1 || rendezvousOwner(node, this.#members) === this.member;
  }

  /** The key (memberKey) of the member that owns `node`. */
  ownerOf(node: string): string {
    return this.#state === 'unavailable' ? this.member : rendezvousOwner(node, this.#members);
  }

  start(): void {
    const { nc, heartbeatMs } = this.#opts;
    this.#subs.push(
      nc.subscribe(this.#subjects.members, {
        callback: (err, msg) => {
          if (err !== null)
            return this.#unavailable(`subscribing to ${this.#subjects.members} failed: ${errorText(err)}`);
          this.#onHeartbeat(msg.data);
        },
      }),
      nc.subscribe(this.#subjects.done, {
        callback: (err, msg) => {
          if (err !== null) return this.#unavailable(`subscribing to ${this.#subjects.done} failed: ${errorText(err)}`);
          this.#onDone(msg.data);
        },
      }),
    );
    if (this.#opts.onAsk !== undefined || this.#opts.onGrant !== undefined || this.#opts.onBusy !== undefined) {
      const work = this.#subjects.work(this.#incarnation);
      const onWork = (err: Error | null, msg: Msg): void => {
        if (err === null) this.#onWork(msg);
        else this.#opts.onInvalid?.(`subscribing to ${work} failed: ${errorText(err)}`);
      };
      this.#subs.push(nc.subscribe(work, { callback: onWork }));
    }
    this.#timers.push(setInterval(() => this.#tick(), heartbeatMs));
    this.#timers.push(
      setTimeout(() => {
        if (this.#state === 'forming') {
          this.#unavailable(
            `no heartbeat of its own came back on ${this.#subjects.members} within ${FORMING_HEARTBEATS} heartbeats ` +
              `(does the broker allow the provisioner to publish and subscribe there?)`,
          );
        }
      }, heartbeatMs * FORMING_HEARTBEATS),
    );
    this.#publishHeartbeat(false);
  }

  /** The live peer whose last heartbeat reported the most queued nodes, if any reported some. */
  busiest(): { member: string; queued: number } | undefined {
    let best: { member: string; queued: number } | undefined;
    for (const [member, p] of this.#peers)
      if (p.heartbeat.queued > (best?.queued ?? 0)) best = { member, queued: p.heartbeat.queued };
    return best;
  }

  /** Asks a live peer for up to `want` of its queued nodes; false when it is not (or no longer) a member. */
  ask(member: string, want: number): boolean {
    return this.#sendWork(member, encodeAsk({ instance: this.instance, incarnation: this.#incarnation, want }));
  }

  /**
   * Tells a peer which queued nodes are now its own (none: nothing to spare). Nodes go as a
   * request the taker answers with a receipt once it has them; `unconfirmed` is called with the
   * reason when no receipt comes (a broker outage, a taker that is gone), as the nodes may then be
   * in no one's queue. False when nothing could be sent.
   */
  grant(member: string, nodes: readonly GrantedNode[], unconfirmed?: (why: string) => void): boolean {
    const body = encodeGrant({ instance: this.instance, incarnation: this.#incarnation, nodes });
    if (nodes.length === 0 || unconfirmed === undefined) return this.#sendWork(member, body);
    const peer = this.#peers.get(member);
    if (peer === undefined || this.#stopped) return false;
    const timeout = this.#opts.receiptTimeoutMs ?? 2 * this.#opts.heartbeatMs;
    const answered = (msg: Msg): void => {
      if (!isReceipt(msg.data, nodes.length)) unconfirmed(`${label(peer.heartbeat)} answered with no receipt`);
    };
    const lost = (err: unknown): void => {
      if (!this.#stopped)
        unconfirmed(`no receipt from ${label(peer.heartbeat)} within ${timeout} ms: ${errorText(err)}`);
    };
    try {
      this.#opts.nc.request(this.#subjects.work(peer.heartbeat.incarnation), body, { timeout }).then(answered, lost);
      return true;
    } catch (err) {
      this.#opts.logger.debug(`Could not send to active/active member ${label(peer.heartbeat)}: ${errorText(err)}`);
      return false;
    }
  }

  /** Tells a peer that this instance is provisioning these nodes of its share (see BusyNotice). */
  busy(member: string, nodes: readonly NodeIdentity[]): boolean {
    return this.#sendWork(member, encodeBusy({ instance: this.instance, incarnation: this.#incarnation, nodes }));
  }

  /** Queues a finished node for the next done notice. */
  announceDone(node: NodeIdentity): void {
    if (this.#stopped || this.#state === 'unavailable') return;
    this.#done.push(node);
    if (this.#done.length >= DONE_BATCH_MAX) this.#flushDone();
    else this.#doneTimer ??= setTimeout(() => this.#flushDone(), DONE_FLUSH_MS);
  }

  /** Sends the pending done notice and a leaving heartbeat, then stops listening. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    this.#flushDone();
    this.#publishHeartbeat(true);
    for (const s of this.#subs) s.unsubscribe();
    this.#subs = [];
    for (const w of this.#readyWaiters.splice(0)) w();
    await this.#opts.nc.flush().catch(() => undefined);
  }

  view(): MembershipView {
    const now = this.#now();
    const selfReport = this.#opts.report();
    const members: MemberView[] = this.#members.map((member) => {
      if (member === this.member)
        return {
          instance: this.instance,
          member,
          self: true,
          lastSeenMs: 0,
          ...selfReport,
          version: this.#opts.version,
        };
      const p = this.#peers.get(member);
      return {
        instance: p?.heartbeat.instance ?? member,
        member,
        self: false,
        lastSeenMs: p === undefined ? 0 : now - p.seenAt,
        owned: p?.heartbeat.owned ?? 0,
        provisioned: p?.heartbeat.provisioned ?? 0,
        queued: p?.heartbeat.queued ?? 0,
        version: p?.heartbeat.version ?? '',
      };
    });
    return { state: this.#state, group: this.group, instance: this.instance, members };
  }

  #tick(): void {
    const now = performance.now();
    const gap = this.#lastTick === undefined ? 0 : now - this.#lastTick;
    this.#lastTick = now;
    if (gap > 2 * this.#opts.heartbeatMs) this.#resumedAfterPause(gap);
    this.#publishHeartbeat(false);
    // at the latest one heartbeat after forming: every live peer has announced itself once by then
    this.#settleAfterPendingMessages();
    this.#expire();
  }

  /**
   * Settles once the messages already received have been read. A timer whose time has come runs
   * before the event loop reads the connection; when the process was busy (a burst of work, a
   * slow start on a loaded machine) a member's answer can be waiting there, and settling first
   * would act on a member list without it.
   */
  #settleAfterPendingMessages(): void {
    // #settle itself does nothing after stop()
    if (this.#state === 'formed' && !this.#settled) setImmediate(() => this.#settle());
  }

  /**
   * The heartbeat timer ran `gapMs` late: this process was paused (SIGSTOP, a stopped VM, a long
   * GC pause) or starved. Meanwhile the others may have taken its share over, and the peers it
   * last heard are old news by its clock. It stops acting on ownership until it has heard a whole
   * heartbeat interval again (as a newcomer settles), and gives every peer a fresh interval rather
   * than expiring them for the silence of its own pause. Its lease lapsed by its own clock anyway.
   */
  #resumedAfterPause(gapMs: number): void {
    if (this.#stopped || this.#state !== 'formed') return;
    const seenAt = this.#now();
    for (const p of this.#peers.values()) p.seenAt = seenAt;
    // the heartbeats sent before the pause stay in #unechoed: their echoes, read after it, count
    // from when they were sent, and renew nothing
    if (!this.#settled) return;
    this.#settled = false;
    this.#opts.logger.warn(
      `Active/active member ${this.member} of group "${this.group}" was not running for ${Math.round(gapMs)} ms: ` +
        `not acting on ownership until it has heard the group again`,
    );
    this.#opts.onChange();
    this.#timers.push(setTimeout(() => this.#settleAfterPendingMessages(), this.#opts.heartbeatMs));
  }

  /** Formed, and the members that answered this instance's first heartbeat are known: act on ownership. */
  #settle(): void {
    if (this.#state !== 'formed' || this.#settled || this.#stopped) return;
    this.#settled = true;
    this.#opts.logger.info(
      `Active/active group "${this.group}" formed with ${this.#members.length} member(s): ${this.#members.join(', ')}`,
    );
    this.#changed();
  }

  /**
   * A process this instance did not know announced itself: answer with a heartbeat now rather than
   * at the next interval, so that a newcomer knows every member before it settles. At once, not
   * later in the turn: whatever this instance sends the newcomer because of the change (a busy
   * notice) must reach it after the heartbeat that makes this instance a member there. One answer
   * per newcomer, not one for several heard together: a heartbeat published before a newcomer's
   * subscription reached the broker would not reach it. A join costs each member one heartbeat.
   */
  #welcome(): void {
    if (!this.#stopped) this.#publishHeartbeat(false);
  }

  #publishHeartbeat(leaving: boolean): void {
    const { owned, provisioned, queued } = this.#opts.report();
    const seq = leaving ? undefined : ++this.#seq;
    const body = encodeHeartbeat({
      instance: this.instance,
      incarnation: this.#incarnation,
      intervalMs: this.#opts.heartbeatMs,
      leaving,
      owned,
      provisioned,
      queued,
      version: this.#opts.version,
      ...(seq !== undefined ? { seq } : {}),
    });
    try {
      this.#opts.nc.publish(this.#subjects.members, body);
      if (seq !== undefined) {
        this.#unechoed.set(seq, performance.now());
        // heartbeats lost on the way (a broker outage) are never heard back: the oldest go
        if (this.#unechoed.size > 2 * MEMBER_TIMEOUT_HEARTBEATS)
          this.#unechoed.delete(this.#unechoed.keys().next().value as number);
      }
    } catch (err) {
      // a closed or draining connection: the next heartbeat tries again
      this.#opts.logger.debug(`Could not publish the active/active heartbeat: ${errorText(err)}`);
    }
  }

  #onHeartbeat(data: Uint8Array): void {
    let hb: Heartbeat;
    try {
      hb = parseHeartbeat(data);
    } catch (err) {
      this.#opts.onInvalid?.(`heartbeat: ${errorText(err)}`);
      return;
    }
    if (hb.incarnation === this.#incarnation && hb.instance === this.instance) {
      this.#heardItself(hb);
      if (this.#state !== 'formed') this.#formed();
      return;
    }
    const key = memberKey(hb.instance, hb.incarnation);
    if (hb.instance === this.instance && !this.#warnedIncarnations.has(hb.incarnation)) {
      this.#warnedIncarnations.add(hb.incarnation);
      this.#opts.logger.error(
        `Another process announces itself as ${this.instance} in active/active group "${this.group}": ` +
          `the two split the fleet like any two members, but the node lock cannot tell them apart, ` +
          `so nothing else keeps them off one node; give every instance its own identity`,
      );
    }
    if (hb.leaving) {
      if (this.#peers.delete(key)) {
        this.#opts.logger.info(`Active/active member ${label(hb)} left group "${this.group}"`);
        this.#recompute();
      }
      return;
    }
    const known = this.#peers.has(key);
    this.#peers.set(key, { heartbeat: hb, seenAt: this.#now() });
    if (!known) {
      this.#opts.logger.info(`Active/active member ${label(hb)} joined group "${this.group}"`);
      this.#welcome();
      this.#recompute();
    }
  }

  /**
   * Its own heartbeat came back: the others heard it no earlier than it was sent. Matched by its
   * seq, so a heartbeat lost on the way does not make every later echo stand for an older send
   * (which would end the lease early on every heartbeat from then on); the ones sent before it that
   * never came back are given up.
   */
  #heardItself(hb: Heartbeat): void {
    if (hb.leaving || hb.seq === undefined) return;
    const sentAt = this.#unechoed.get(hb.seq);
    if (sentAt === undefined) return;
    for (const seq of this.#unechoed.keys()) {
      if (seq > hb.seq) break;
      this.#unechoed.delete(seq);
    }
    const heartbeatMs = this.#opts.heartbeatMs;
    this.#leaseEnd = Math.max(this.#leaseEnd, sentAt + MEMBER_TIMEOUT_HEARTBEATS * heartbeatMs - heartbeatMs / 2);
  }

  #onDone(data: Uint8Array): void {
    try {
      const notice = parseDone(data);
      // our own notice comes back too; a sender that predates process ids is told apart by identity
      const own =
        notice.incarnation !== undefined
          ? notice.incarnation === this.#incarnation && notice.instance === this.instance
          : notice.instance === this.instance;
      if (!own) this.#opts.onDone(notice.nodes, notice.instance);
    } catch (err) {
      this.#opts.onInvalid?.(`done notice: ${errorText(err)}`);
    }
  }

  #sendWork(member: string, body: string): boolean {
    const peer = this.#peers.get(member);
    if (peer === undefined || this.#stopped) return false;
    try {
      this.#opts.nc.publish(this.#subjects.work(peer.heartbeat.incarnation), body);
      return true;
    } catch (err) {
      this.#opts.logger.debug(`Could not send to active/active member ${label(peer.heartbeat)}: ${errorText(err)}`);
      return false;
    }
  }

  #onWork(msg: Msg): void {
    try {
      const m = parseWorkMessage(msg.data);
      if ('ask' in m) this.#opts.onAsk?.(memberKey(m.ask.instance, m.ask.incarnation), m.ask.want);
      else if ('grant' in m) {
        const onGrant = this.#opts.onGrant;
        if (onGrant === undefined) return;
        onGrant(memberKey(m.grant.instance, m.grant.incarnation), m.grant.nodes);
        // the giver waits for this before it counts the nodes as handed over
        if (msg.reply !== undefined && msg.reply !== '')
          msg.respond(encodeReceipt(this.instance, this.#incarnation, m.grant.nodes.length));
      } else this.#opts.onBusy?.(memberKey(m.busy.instance, m.busy.incarnation), m.busy.nodes);
    } catch (err) {
      this.#opts.onInvalid?.(`work message: ${errorText(err)}`);
    }
  }

  #flushDone(): void {
    clearTimeout(this.#doneTimer);
    this.#doneTimer = undefined;
    if (this.#done.length === 0) return;
    const nodes = this.#done;
    this.#done = [];
    try {
      this.#opts.nc.publish(
        this.#subjects.done,
        encodeDone({ instance: this.instance, incarnation: this.#incarnation, nodes }),
      );
    } catch (err) {
      this.#opts.logger.debug(`Could not publish ${nodes.length} finished nodes to the group: ${errorText(err)}`);
    }
  }

  #expire(): void {
    const now = this.#now();
    let gone = false;
    for (const [member, p] of this.#peers) {
      if (now - p.seenAt > p.heartbeat.intervalMs * MEMBER_TIMEOUT_HEARTBEATS) {
        this.#peers.delete(member);
        this.#opts.logger.warn(
          `Active/active member ${label(p.heartbeat)} of group "${this.group}" ` +
            `was not heard for ${now - p.seenAt} ms, taking over its share`,
        );
        gone = true;
      }
    }
    if (gone) this.#recompute();
  }

  #formed(): void {
    const was = this.#state;
    this.#state = 'formed';
    if (was === 'forming')
      this.#timers.push(
        setTimeout(() => this.#settleAfterPendingMessages(), Math.min(SETTLE_MS, this.#opts.heartbeatMs)),
      );
    if (was === 'unavailable') {
      // heard itself after all: leave lock-only mode at once, the peers are already known
      this.#settled = true;
      this.#opts.logger.warn(`Active/active group "${this.group}" formed after all; leaving lock-only mode`);
      this.#changed();
    }
  }

  #unavailable(reason: string): void {
    if (this.#state === 'unavailable' || this.#stopped) return;
    this.#state = 'unavailable';
    this.#opts.logger.warn(
      `Active/active membership for group "${this.group}" is unavailable, continuing lock-only ` +
        `(every instance tries every node, in random order, and the node lock keeps them apart): ${reason}`,
    );
    this.#changed();
  }

  #recompute(): void {
    this.#members = [this.member, ...this.#peers.keys()].sort();
    if (this.ready) this.#changed();
  }

  /** Tells the owner (and, once ready, whoever waits for it); #recompute keeps #members current. */
  #changed(): void {
    if (this.ready) for (const w of this.#readyWaiters.splice(0)) w();
    this.#opts.onChange();
  }
}

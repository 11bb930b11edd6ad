// Which nodes this instance may work on: every node when it works alone or leads the election;
// with active/active, its share, the nodes the membership gives it (every node again when the
// membership is unavailable and the node lock alone keeps the instances apart). Everything that
// takes, keeps or hands over a node asks mayWork here. Nodes seen that another member owns are
// kept (the foreign nodes), so this instance takes its new share at once when the members change.
// Queued nodes handed over between members (work-handover.ts) bend the share: a node granted to
// this instance is its own, one it handed to another member is not, for as long as the membership
// is formed and the hand-over stands (the taker finishes the node or leaves, or it expires).
import type { NodeIdentity } from '../choria/identity.js';
import type { CoordinationMode } from '../config/types.js';
import type { EffectiveCoordination } from '../metrics/metrics.js';
import type { DiscoverySource } from './active-list.js';
import { ForeignNodes, type ForeignNode, type Membership } from './coordination/index.js';

/** Fisher-Yates, in place: lock-only instances that try nodes in the same order would collide on every one. */
function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

/**
 * How long a hand-over bends the share. A taker finishes its nodes within seconds; this only
 * bounds what a lost grant (the taker never heard of its nodes) or a node that never finished
 * leaves behind, after which the share is rendezvous hashing's again and the node lock keeps
 * the two apart.
 */
export const HANDOVER_TTL_MS = 5 * 60_000;

export class WorkPolicy {
  readonly #foreign: ForeignNodes;
  #membership: Membership | undefined;
  /** nodes other members handed to this instance: identity -> when */
  readonly #granted = new Map<string, number>();
  /** nodes this instance handed to another member: identity -> the taker and when */
  readonly #handed = new Map<string, { readonly member: string; readonly at: number }>();

  /** `foreignCapacity`: how many foreign nodes are kept at most (the oldest sighting goes first) */
  constructor(foreignCapacity: number) {
    this.#foreign = new ForeignNodes(foreignCapacity);
  }

  /** active/active: from now on the membership decides who owns which node. */
  follow(membership: Membership): void {
    this.#membership = membership;
  }

  get membership(): Membership | undefined {
    return this.#membership;
  }

  /** May this instance work on `identity` now? */
  mayWork(identity: string): boolean {
    const membership = this.#membership;
    if (membership === undefined) return true;
    if (membership.state === 'formed') {
      if (this.#handed.has(identity)) return false;
      if (this.#granted.has(identity)) return true;
    }
    return membership.owns(identity);
  }

  /**
   * May this instance hand `identity` over to another member? Only a node of its own share: one it
   * was handed itself stays (passed on, the first giver would wait for the wrong taker).
   */
  mayHandOver(identity: string): boolean {
    const membership = this.#membership;
    return (
      membership !== undefined &&
      membership.state === 'formed' &&
      !this.#granted.has(identity) &&
      !this.#handed.has(identity) &&
      membership.owns(identity)
    );
  }

  /** Whether `identity` is kept as another member's node (it answered once, so it is known). */
  isForeign(identity: string): boolean {
    return this.#foreign.has(identity);
  }

  /** Another member handed `identity` to this instance: ours now, no longer a foreign node. */
  granted(identity: string, now: number): void {
    this.#foreign.delete(identity);
    this.#handed.delete(identity);
    this.#granted.set(identity, now);
  }

  /**
   * `identity` is `member`'s (a memberKey) whatever rendezvous hashing says: this instance handed
   * it over, or `member` reported that it is provisioning it (a busy notice).
   */
  handedTo(identity: string, member: string, now: number): void {
    this.#granted.delete(identity);
    this.#handed.set(identity, { member, at: now });
  }

  /**
   * `member` never confirmed taking `identity`: the hand-over is undone and the node is this
   * instance's again (as far as the share says). False when the hand-over no longer stands (the
   * taker finished it, left, or it expired).
   */
  takeBack(identity: string, member: string): boolean {
    if (this.#handed.get(identity)?.member !== member) return false;
    this.#handed.delete(identity);
    this.#foreign.delete(identity);
    return true;
  }

  /** The node is finished (here or by its taker): the hand-over is over. */
  forgetHandover(identity: string): void {
    this.#granted.delete(identity);
    this.#handed.delete(identity);
  }

  /** Nodes handed to members no longer in `members` are back to rendezvous hashing (maybe ours). */
  membersChanged(members: readonly string[]): void {
    const live = new Set(members);
    for (const [identity, h] of this.#handed) if (!live.has(h.member)) this.#handed.delete(identity);
  }

  /** Ends the hand-overs older than HANDOVER_TTL_MS. */
  expireHandovers(now: number): void {
    for (const [identity, at] of this.#granted) if (now - at > HANDOVER_TTL_MS) this.#granted.delete(identity);
    for (const [identity, h] of this.#handed) if (now - h.at > HANDOVER_TTL_MS) this.#handed.delete(identity);
  }

  get handovers(): { granted: number; handed: number } {
    return { granted: this.#granted.size, handed: this.#handed.size };
  }

  /**
   * When another provisioner holds the lock of a node this instance may work on: wait the lock
   * out (only when the members agree on owners: then the other is the owner we both agree on, busy
   * with it, or one that left without finishing it), else drop it until it is seen again.
   */
  get waitsOutLocks(): boolean {
    return this.#membership?.state === 'formed';
  }

  /**
   * Whether a discovery offers each node as its reply arrives. Not when lock-only: instances that
   * all try every node must each go through them in an order of their own (`order`), so the
   * offers wait for the whole list.
   */
  get offersAsFound(): boolean {
    return !this.#lockOnly;
  }

  /** The order in which to offer the nodes a discovery found (in place): random when lock-only. */
  order<T extends string>(found: T[]): T[] {
    return this.#lockOnly ? shuffle(found) : found;
  }

  /** Whether the ownership is settled enough to act on (always without a membership). */
  get ready(): boolean {
    return this.#membership === undefined || this.#membership.ready;
  }

  /** What the instance runs as: lock_only when active_active could not form a membership. */
  effective(configured: CoordinationMode): EffectiveCoordination {
    return configured === 'active_active' && this.#lockOnly ? 'lock_only' : configured;
  }

  get foreignCount(): number {
    return this.#foreign.size;
  }

  /** A node another member owns was seen (or handed over): kept in case its owner leaves. */
  noteForeign(identity: NodeIdentity, source: DiscoverySource, now: number, reportedVersion?: string): void {
    this.#foreign.note(identity, source, now, reportedVersion);
  }

  /** Takes the foreign nodes this instance may now work on. */
  takeOwned(): ForeignNode[] {
    return this.#foreign.takeWhere((identity) => this.mayWork(identity));
  }

  get #lockOnly(): boolean {
    return this.#membership?.state === 'unavailable';
  }

  forgetForeign(identity: string): boolean {
    return this.#foreign.delete(identity);
  }

  /** Forgets the foreign nodes not seen since `before` (a node still waiting is seen by every discovery). */
  forgetUnseenSince(before: number): number {
    return this.#foreign.forgetOlderThan(before);
  }
}

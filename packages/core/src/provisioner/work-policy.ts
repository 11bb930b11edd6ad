// Which nodes this instance may work on: every node when it works alone or leads the election;
// with active/active, its share, the nodes the membership gives it (every node again when the
// membership is unavailable and the node lock alone keeps the instances apart). Everything that
// takes, keeps or hands over a node asks mayWork here. Nodes seen that another member owns are
// kept (the foreign nodes), so this instance takes its new share at once when the members change.
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

export class WorkPolicy {
  readonly #foreign: ForeignNodes;
  #membership: Membership | undefined;

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
    return this.#membership === undefined || this.#membership.owns(identity);
  }

  /**
   * When another provisioner holds the lock of a node this instance may work on: wait the lock
   * out (only when the members agree on owners: then the other is the owner we both agree on, busy
   * with it, or one that left without finishing it), else drop it until it is seen again.
   */
  get waitsOutLocks(): boolean {
    return this.#membership?.state === 'formed';
  }

  /** The order in which to offer the nodes a discovery found (in place): random when lock-only. */
  order(found: string[]): string[] {
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
  noteForeign(identity: string, source: DiscoverySource, now: number, reportedVersion?: string): void {
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

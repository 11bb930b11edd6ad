// Nodes this instance has seen (by discovery or a startup event) that another active/active member
// owns. Kept so that when the owner leaves, its share is taken over at once instead of at the next
// discovery; forgotten when the owner reports them finished, when they are not seen again for a
// while, or oldest first beyond the capacity.
import type { NodeIdentity } from '../../choria/identity.js';
import type { DiscoverySource } from '../active-list.js';

export interface ForeignNode {
  readonly identity: NodeIdentity;
  source: DiscoverySource;
  reportedVersion: string | undefined;
  seenAt: number;
}

export class ForeignNodes {
  readonly #nodes = new Map<string, ForeignNode>();
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#nodes.size;
  }

  /** Records a sighting; a known node moves to the young end. */
  note(identity: NodeIdentity, source: DiscoverySource, now: number, reportedVersion?: string): void {
    const known = this.#nodes.get(identity);
    this.#nodes.delete(identity);
    this.#nodes.set(identity, {
      identity,
      source,
      seenAt: now,
      reportedVersion: reportedVersion ?? known?.reportedVersion,
    });
    while (this.#nodes.size > this.#capacity) this.#nodes.delete(this.#nodes.keys().next().value as string);
  }

  has(identity: string): boolean {
    return this.#nodes.has(identity);
  }

  delete(identity: string): boolean {
    return this.#nodes.delete(identity);
  }

  /** Removes and returns every node `take` accepts. */
  takeWhere(take: (identity: string) => boolean): ForeignNode[] {
    const taken: ForeignNode[] = [];
    for (const [identity, node] of this.#nodes) {
      if (take(identity)) {
        this.#nodes.delete(identity);
        taken.push(node);
      }
    }
    return taken;
  }

  /** Forgets nodes not seen since `before` (a node still waiting is seen by every discovery). */
  forgetOlderThan(before: number): number {
    let n = 0;
    for (const [identity, node] of this.#nodes) {
      if (node.seenAt >= before) break; // insertion order is sighting order
      this.#nodes.delete(identity);
      n++;
    }
    return n;
  }
}

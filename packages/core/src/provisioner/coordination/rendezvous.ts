// Rendezvous (highest random weight) hashing: every instance that knows the same member list picks
// the same owner for a node, and a member joining or leaving moves only the nodes it gains or held.
// Written here rather than imported: it is a dozen lines, and the choice needs no cryptographic
// strength, so a 32-bit mix per (member, node) pair does instead of a digest call.

/** FNV-1a over the UTF-16 code units of `text`, starting from `seed`. */
function fnv1a(text: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The murmur3 finaliser: FNV alone leaves similar names (node-1, node-2) with similar high bits. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const FNV_OFFSET = 0x811c9dc5;

/** The weight of `member` for `node`: the member's name hash seeds the node's. */
export function rendezvousWeight(member: string, node: string): number {
  return mix(fnv1a(node, fnv1a(member, FNV_OFFSET) ^ 0x9e3779b9));
}

/**
 * The member that owns `node`: the highest weight, ties broken by the smaller name so that every
 * instance agrees. `members` must not be empty.
 */
export function rendezvousOwner(node: string, members: readonly string[]): string {
  let best: string | undefined;
  let bestWeight = -1;
  for (const m of members) {
    const w = rendezvousWeight(m, node);
    if (w > bestWeight || (w === bestWeight && best !== undefined && m < best)) {
      best = m;
      bestWeight = w;
    }
  }
  if (best === undefined) throw new Error('rendezvous hashing needs at least one member');
  return best;
}

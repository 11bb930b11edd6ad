// Per-node back-off and quarantine: a node whose attempt failed is not tried again before its
// back-off (doubling from `retry_backoff` to `retry_backoff_max`, jittered so a failed batch does
// not come back as one), and after `quarantine_after` failed attempts in a row it is not tried at
// all until an operator releases it or (with `quarantine_release_on_startup`) it boots again.
// Bounded: beyond the capacity the oldest setback is forgotten, which only means an earlier retry.

export interface SetbackPolicy {
  /** first back-off in ms; 0: retry as upstream does (the next discovery or event) */
  readonly backoffMs: number;
  readonly backoffMaxMs: number;
  /** failed attempts in a row before quarantine; 0: never */
  readonly quarantineAfter: number;
  /** [0, 1) source for the jitter */
  readonly random?: () => number;
}

export interface Setback {
  /** failed attempts in a row */
  failures: number;
  /** not offered before this time (ms since the epoch); 0: no back-off */
  notBefore: number;
  /** set when quarantined: the last failure's message and when */
  quarantined: { readonly reason: string; readonly at: number } | undefined;
}

/** The back-off after the `failures`-th failure in a row: base × 2^(failures−1), capped, × [0.5, 1). */
export function backoffAfter(failures: number, policy: SetbackPolicy): number {
  if (policy.backoffMs <= 0 || failures < 1) return 0;
  const full = Math.min(policy.backoffMaxMs, policy.backoffMs * 2 ** Math.min(failures - 1, 30));
  return Math.round(full * (0.5 + (policy.random ?? Math.random)() / 2));
}

export class Setbacks {
  readonly #byNode = new Map<string, Setback>();
  readonly #policy: SetbackPolicy;
  readonly #capacity: number;
  /** how many of #byNode are quarantined (read every second for the gauge) */
  #quarantined = 0;

  constructor(policy: SetbackPolicy, capacity = 100_000) {
    this.#policy = policy;
    this.#capacity = capacity;
  }

  get(identity: string): Setback | undefined {
    return this.#byNode.get(identity);
  }

  /** Why `identity` may not be offered now, if it may not. */
  holdsBack(identity: string, now: number): 'quarantined' | 'backoff' | undefined {
    const s = this.#byNode.get(identity);
    if (s === undefined) return undefined;
    if (s.quarantined !== undefined) return 'quarantined';
    return s.notBefore > now ? 'backoff' : undefined;
  }

  /** Records a failed attempt; returns the node's setback (quarantined once the policy says so). */
  failed(identity: string, reason: string, now: number): Setback {
    const s = this.#byNode.get(identity) ?? { failures: 0, notBefore: 0, quarantined: undefined };
    s.failures++;
    s.notBefore = now + backoffAfter(s.failures, this.#policy);
    if (this.#policy.quarantineAfter > 0 && s.failures >= this.#policy.quarantineAfter) {
      if (s.quarantined === undefined) this.#quarantined++;
      s.quarantined = { reason, at: now };
    }
    this.#byNode.delete(identity);
    this.#byNode.set(identity, s);
    while (this.#byNode.size > this.#capacity) this.clear(this.#byNode.keys().next().value as string);
    return s;
  }

  /** A success, an operator's release or retry, or (policy permitting) a reboot: a clean slate. */
  clear(identity: string): boolean {
    if (this.#byNode.get(identity)?.quarantined !== undefined) this.#quarantined--;
    return this.#byNode.delete(identity);
  }

  /** Ends a back-off but keeps a quarantine. */
  clearBackoff(identity: string): void {
    const s = this.#byNode.get(identity);
    if (s !== undefined && s.quarantined === undefined) this.#byNode.delete(identity);
  }

  quarantinedCount(): number {
    return this.#quarantined;
  }
}

// Remembers, per node, when the lifecycle events that prove an action happened last arrived
// (`provisioned` after configure, `shutdown` after restart/shutdown, `upgraded` and the provisioning
// mode `startup` after release_update). Consulted only when a reply was lost (lost-reply.ts), but
// it must listen all the time: the event usually arrives before the loss is noticed.
import type { ChoriaClient, LifecycleSubscription } from '../choria/client.js';
import type { LifecycleType } from '../choria/lifecycle.js';

/** Event types that are evidence for some action. */
export const WITNESSED_TYPES = ['provisioned', 'shutdown', 'upgraded', 'startup'] as const;
export type WitnessedType = (typeof WITNESSED_TYPES)[number];

export interface LifecycleWitnessOptions {
  /** the component of provisioning-mode servers (config `lifecycle_component`) */
  readonly provisioningComponent: string;
  /** entries older than this are forgotten (default 10 minutes: far beyond any RPC timeout) */
  readonly maxAgeMs?: number;
  /** at most this many nodes are remembered (default 200,000) */
  readonly maxNodes?: number;
}

type Seen = Partial<Record<WitnessedType, number>>;

export class LifecycleWitness {
  readonly #seen = new Map<string, Seen>();
  readonly #maxAgeMs: number;
  readonly #maxNodes: number;
  readonly #subscriptions: LifecycleSubscription[] = [];

  constructor(opts: Omit<LifecycleWitnessOptions, 'provisioningComponent'> = {}) {
    this.#maxAgeMs = opts.maxAgeMs ?? 600_000;
    this.#maxNodes = opts.maxNodes ?? 200_000;
  }

  /** A witness listening on `client`; its subscriptions end with the client. */
  static listen(client: ChoriaClient, opts: LifecycleWitnessOptions): LifecycleWitness {
    const w = new LifecycleWitness(opts);
    const record = (ev: { type: LifecycleType; identity: string }): void =>
      w.record(ev.identity, ev.type as WitnessedType);
    const quiet = { onInvalid: () => undefined };
    for (const type of ['provisioned', 'shutdown', 'upgraded'] as const)
      w.#subscriptions.push(client.subscribeLifecycle(type, '*', record, quiet));
    // a startup in provisioning mode proves a release_update was carried out (the node re-executed)
    w.#subscriptions.push(client.subscribeLifecycle('startup', opts.provisioningComponent, record, quiet));
    return w;
  }

  record(identity: string, type: WitnessedType, atMs: number = performance.now()): void {
    const seen = this.#seen.get(identity) ?? {};
    seen[type] = atMs;
    // re-insert so the map stays ordered by last activity, oldest first
    this.#seen.delete(identity);
    this.#seen.set(identity, seen);
    this.#prune(atMs);
  }

  /** True when an event of one of `types` from `identity` arrived at or after `sinceMs` (performance.now() time). */
  sawSince(identity: string, types: readonly WitnessedType[], sinceMs: number): boolean {
    const seen = this.#seen.get(identity);
    if (seen === undefined) return false;
    return types.some((t) => (seen[t] ?? -Infinity) >= sinceMs);
  }

  get size(): number {
    return this.#seen.size;
  }

  close(): void {
    for (const s of this.#subscriptions.splice(0)) s.unsubscribe();
    this.#seen.clear();
  }

  #prune(nowMs: number): void {
    for (const [identity, seen] of this.#seen) {
      const newest = Math.max(...Object.values(seen));
      if (this.#seen.size <= this.#maxNodes && nowMs - newest <= this.#maxAgeMs) return;
      this.#seen.delete(identity);
    }
  }
}

// Per-node claims of an active/active site: before an attempt sends anything to a node, this
// process claims the node in its shared history record, with compare-and-set, as a process (its
// identity and a random incarnation), not as a Choria identity. A claim held by another live
// process refuses the attempt, so neither the group still forming at start-up (every member alone
// for a moment), a late heartbeat, a paused member nor instances that share one identity can have
// two processes provision one node at once: the node lock of go-choria cannot tell two instances
// with one identity apart, the claim can.
//
// A claim has a bounded life, read on each process's own monotonic clock and never from a time in
// the record: its holder may act until CLAIM_LIFE_MS less a margin after it sent the claim's write,
// and another process takes it over only once it has seen the same claim unchanged for
// CLAIM_LIFE_MS (it saw it after it was sent, so it can never count from earlier), or for
// DEAD_HOLDER_MS while its holder is not a live member of the group (a process that died: a live
// one that acts has heard its own heartbeat, so the others hear it too; a paused one has lost its
// lease, and sends nothing when it resumes). An attempt's end gives the claim back
// (NodeHistory.attempted), and a configure or restart renews it when less than half its life is
// left. Without a shared history there are no claims: the node lock alone keeps instances apart.
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { memberKey } from './coordination/membership.js';
import type { ClaimSource, RecordedChange } from '../host/claim.js';
import type { IssuedCredentials } from '../host/credentials.js';
import { Claim } from '../host/claim.js';
import type { HostResult, HostRunner } from '../host/types.js';
import { formatMs } from '../util/duration.js';
import type { NodeHistory, NodeRecord } from './history/index.js';
import { emptyRecord } from './history/record.js';
import { recordSharedIntent } from './lease.js';

/** How long a claim lasts without being renewed, on the clock of whoever reads it. */
export const CLAIM_LIFE_MS = 30_000;
/** The holder stops acting on its claim this long before its life is over. */
export const CLAIM_MARGIN_MS = 5_000;
/** How long taking a claim waits for the shared history to take it (a broker just back may take seconds). */
export const CLAIM_WAIT_MS = 10_000;
/** A claim whose holder is not a live member is taken over once seen unchanged this long. */
export const DEAD_HOLDER_MS = 10_000;

/** A process of this site: its Choria identity and a random incarnation, as the membership names its members. */
export function processToken(identity: string): string {
  return memberKey(identity, randomBytes(8).toString('hex'));
}

export interface NodeClaimsOptions {
  /** the site's history; claims are taken while it is shared, in the name of its process */
  readonly history: NodeHistory;
  /** the live members of the group (memberKey), when there is a membership */
  readonly liveMembers?: () => readonly string[] | undefined;
  /** the monotonic clock; performance.now by default */
  readonly now?: () => number;
  readonly wallClock?: () => number;
}

export class NodeClaims {
  readonly #opts: NodeClaimsOptions;
  readonly #now: () => number;
  readonly #wallClock: () => number;
  /** claims of others as this process saw them: the claim (holder and time) and when it was first seen */
  readonly #seen = new Map<string, { readonly claim: string; readonly at: number }>();
  /** this process's claims: when the write of each was sent */
  readonly #mine = new Map<string, number>();

  constructor(opts: NodeClaimsOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => performance.now());
    this.#wallClock = opts.wallClock ?? Date.now;
  }

  /** whether claims can be taken: the history is shared */
  get shared(): boolean {
    return this.#opts.history.shared;
  }

  /** Claims `identity` for this process; resolves undefined once the shared history has it, else why not. */
  async take(identity: string): Promise<string | undefined> {
    const { history } = this.#opts;
    const process = history.process;
    const sentAt = this.#now();
    const at = this.#wallClock();
    const handle = history.change(identity, (b) => {
      if (b?.claimedBy !== undefined && b.claimedBy !== process && !this.#expired(identity, b)) return undefined;
      return {
        ...(b ?? emptyRecord(identity, at, history.instance)),
        claimedBy: process,
        claimedAt: at,
        updatedAt: at,
      };
    });
    if (handle.after === undefined) return this.#heldBy(identity);
    // waited for even while the shared copy is slow (a broker just back): no claim, no attempt
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), CLAIM_WAIT_MS)));
    const written = await Promise.race([handle.ended, late]).finally(() => clearTimeout(timer));
    if (written === 'written') {
      this.#mine.set(identity, sentAt);
      return undefined;
    }
    if (written === 'refused') return this.#heldBy(identity);
    return `the claim on the node could not be shared within ${formatMs(CLAIM_WAIT_MS)} (${written})`;
  }

  /** undefined while this process's claim on `identity` holds; otherwise why not. */
  refusal(identity: string): string | undefined {
    const sentAt = this.#mine.get(identity);
    if (sentAt === undefined) return 'this process holds no claim on the node';
    const left = sentAt + CLAIM_LIFE_MS - CLAIM_MARGIN_MS - this.#now();
    if (left <= 0) return `this process's claim on the node ran out ${formatMs(-left)} ago by its own clock`;
    const r = this.#opts.history.get(identity);
    if (r !== undefined && r.claimedBy !== this.#opts.history.process)
      return `another process (${r.claimedBy ?? 'none'}) holds the claim on the node now`;
    return undefined;
  }

  /** Renews this process's claim when less than half its life is left (a configure or restart is about to go). */
  async renew(identity: string): Promise<void> {
    const sentAt = this.#mine.get(identity);
    if (sentAt === undefined || this.#now() - sentAt < CLAIM_LIFE_MS / 2) return;
    const process = this.#opts.history.process;
    const renewedAt = this.#now();
    const at = this.#wallClock();
    const handle = this.#opts.history.change(identity, (b) =>
      b?.claimedBy !== process ? undefined : { ...b, claimedAt: at, updatedAt: at },
    );
    if ((await this.#opts.history.waitFor(identity, handle, CLAIM_WAIT_MS)) === 'written')
      this.#mine.set(identity, renewedAt);
  }

  /** Records a configure or restart and waits until it is shared (recordSharedIntent): under a claim, nothing blind. */
  async recordIntent(identity: string, what: RecordedChange, credentials?: IssuedCredentials): Promise<void> {
    await recordSharedIntent(this.#opts.history, identity, what, this.#wallClock(), credentials);
  }

  /** When the node's record says a configure was sent that no attempt saw restart (HostJob.configuredAt). */
  configuredAt(identity: string): number | undefined {
    return this.#opts.history.get(identity)?.configuredAt;
  }

  /** The attempt ended: this process no longer counts on its claim (NodeHistory.attempted gives it back). */
  ended(identity: string): void {
    this.#mine.delete(identity);
    this.#seen.delete(identity);
  }

  /** Whether another process's claim on the node has outlived its life, as this process has seen it. */
  #expired(identity: string, r: NodeRecord): boolean {
    const claim = `${r.claimedBy ?? ''}@${r.claimedAt ?? 0}`;
    const seen = this.#seen.get(identity);
    const now = this.#now();
    if (seen === undefined || seen.claim !== claim) {
      this.#seen.set(identity, { claim, at: now });
      return false;
    }
    const waited = now - seen.at;
    return waited >= CLAIM_LIFE_MS || (waited >= DEAD_HOLDER_MS && !this.#live(r.claimedBy));
  }

  /** Whether `holder` is a live member; without a membership, taken to be one. */
  #live(holder: string | undefined): boolean {
    const members = this.#opts.liveMembers?.();
    return members === undefined || holder === undefined || members.includes(holder);
  }

  /** The holder of the node's claim is not a live member: its claim goes to whoever asks after DEAD_HOLDER_MS. */
  heldByTheDead(identity: string): boolean {
    const holder = this.#opts.history.get(identity)?.claimedBy;
    return holder !== undefined && holder !== this.#opts.history.process && !this.#live(holder);
  }

  #heldBy(identity: string): string {
    const by = this.#opts.history.get(identity)?.claimedBy ?? 'another process';
    return `another provisioner process (${by}) holds the claim on the node`;
  }
}

/**
 * A host runner that works on a node only under this process's claim: taken before the attempt
 * starts (a node claimed by another live process ends as `skipped_locked`, as a node locked by
 * another provisioner does), asked with the lease before every request, and renewed when a
 * configure or restart is recorded.
 */
export function claimedRunner(runner: HostRunner, claims: NodeClaims, lease: ClaimSource): HostRunner {
  return async (job) => {
    if (!claims.shared) return runner(job);
    let why = await claims.take(job.identity);
    // a claim left by a process that died is free soon: waited for here, not for a lock retry
    if (why !== undefined && claims.heldByTheDead(job.identity))
      job.logger.info(
        `Waiting for the claim on ${job.identity}: ${why}, a process that is no longer a member ` +
          `(taken over once seen for ${formatMs(DEAD_HOLDER_MS)})`,
      );
    for (let waited = 0; why !== undefined && waited <= DEAD_HOLDER_MS && claims.heldByTheDead(job.identity);) {
      await sleep(1_000, undefined, { signal: job.signal }).catch(() => undefined);
      if (job.signal.aborted) break;
      waited += 1_000;
      why = await claims.take(job.identity);
    }
    if (why !== undefined) return { outcome: 'skipped_locked', message: why } satisfies HostResult;
    const source: ClaimSource = {
      refusal: () => lease.refusal() ?? claims.refusal(job.identity),
      recordIntent: async (identity: string, what: RecordedChange, credentials?: IssuedCredentials) => {
        await claims.renew(identity);
        await claims.recordIntent(identity, what, credentials);
      },
    };
    // the claim was written over the newest record: whether an earlier attempt left the node
    // configured is read from it, not from the view the job was made from
    const configuredAt = claims.configuredAt(job.identity);
    const claimed = { ...job, claim: new Claim(job.identity, source) };
    delete claimed.configuredAt;
    try {
      return await runner(configuredAt === undefined ? claimed : { ...claimed, configuredAt });
    } finally {
      claims.ended(job.identity);
    }
  };
}

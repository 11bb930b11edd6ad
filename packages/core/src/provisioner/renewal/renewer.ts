// Renews the credentials of a site's provisioned nodes before they expire: at each node's time
// (plan.ts) it sends the node `choria_provision#reprovision` on the fleet's own collective; the node
// restarts into provisioning mode and the site provisions it again, which ends the renewal (its
// history record then names the new credentials).
//
// The renewer decides only when and to whom `reprovision` goes, in rounds. A round starts with one
// node, the canary, and goes on only once the canary is provisioned again; then up to
// `concurrency` nodes of the site renew at once (counted over the shared history, so across the
// instances). A node not provisioned again within `returnTimeoutMs` fails its renewal and stops the
// renewals, as do `failureLimit` failures in a row (a refused `reprovision`, say): nothing more is
// sent until an operator resumes them. Every `reprovision` is recorded in the node's history before
// it goes (NodeHistory.renewalSending), so neither another instance nor this one after a restart
// sends it twice; which instance may renew which node is the site's own rule (`mayRenew`).
import type { Logger } from 'winston';
import type { RenewalSettings } from '../../config/types.js';
import type { RenewalEvent } from '../../metrics/metrics.js';
import { formatMs } from '../../util/duration.js';
import type { NodeHistory } from '../history/index.js';
import type { NodeRecord } from '../history/record.js';
import { SENDING_RECORD_WAIT_MS } from '../lease.js';
import { renewalDueAt, renewalState, type RenewalState } from './plan.js';

/** How a `reprovision` went: the node took it, refused it (go-choria's reason), or did not answer. */
export type ReprovisionAnswer =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'no-reply'; readonly reason: string };

export interface RenewerOptions {
  readonly settings: RenewalSettings;
  readonly history: NodeHistory;
  readonly logger: Logger;
  readonly metrics: { renewal(event: RenewalEvent): void; setRenewals(due: number, inFlight: number): void };
  /** this instance may send `reprovision` to the node now (running, not paused, its right to act, its node) */
  readonly mayRenew: (identity: string) => boolean;
  readonly reprovision: (identity: string) => Promise<ReprovisionAnswer>;
  /** a dry run: says what it would send, sends nothing */
  readonly dryRun?: boolean;
  readonly now?: () => number;
  /** how long a `reprovision` waits for its record to reach the shared history (default: as a configure's) */
  readonly recordWaitMs?: number;
}

/** One node in the renewal view. */
export interface RenewalEntry {
  readonly identity: string;
  readonly state: RenewalState;
  /** ISO 8601, as every time of the status */
  readonly expiresAt: string;
  /** scheduled and due: when it renews */
  readonly dueAt?: string;
  /** in flight and failed: when `reprovision` was sent, and by which instance */
  readonly sentAt?: string;
  readonly sentBy?: string;
  /** failed: why; not renewable: why not */
  readonly reason?: string;
}

export interface RenewalView {
  /** the renewals stopped, and why; undefined while they run */
  readonly stopped: string | undefined;
  readonly counts: Readonly<Record<Exclude<RenewalState, 'none'>, number>>;
  /** up to `limit` of each: the next renewals (soonest first), those in flight, failed and not renewable */
  readonly next: readonly RenewalEntry[];
  readonly inFlight: readonly RenewalEntry[];
  readonly failed: readonly RenewalEntry[];
  readonly notRenewable: readonly RenewalEntry[];
}

/** A `reprovision` this instance sent: when, the expiry it renews, and why it had no answer if it had none. */
interface SentReprovision {
  readonly sentAt: number;
  readonly expiresAt: number;
  /** a server without an active choria_provision agent is silent */
  unanswered?: string;
}

export class Renewer {
  readonly #opts: RenewerOptions;
  readonly #now: () => number;
  #stopped: string | undefined;
  #failuresInRow = 0;
  /** the round in progress: its canary, and whether the canary was provisioned again */
  #round: { canary: string; canaryBack: boolean } | undefined;
  /** `reprovision` this instance sent and has not seen end, by identity */
  readonly #sent = new Map<string, SentReprovision>();
  /** dry run: the nodes already reported, by the expiry they were reported for */
  readonly #reported = new Map<string, number>();
  #ticking = false;
  readonly #sending = new Set<Promise<void>>();

  constructor(opts: RenewerOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  get stopped(): string | undefined {
    return this.#stopped;
  }

  /** An operator resumes stopped renewals: the failed ones are due again. */
  resume(): number {
    this.#stopped = undefined;
    this.#failuresInRow = 0;
    this.#round = undefined;
    this.#sent.clear();
    const cleared = this.#opts.history.renewalFailuresCleared(this.#now());
    this.#opts.logger.info(`Renewals resumed; ${cleared} failed renewal(s) are due again`);
    return cleared;
  }

  /** One look at the site's nodes: ends what ended, starts sending what is due. */
  tick(): void {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      this.#tick();
    } finally {
      this.#ticking = false;
    }
  }

  #tick(): void {
    const now = this.#now();
    const { due, inFlight: renewing } = this.#look(now);
    this.#noteEnded(renewing, now);
    const inFlight = renewing.length;
    this.#opts.metrics.setRenewals(due.length, inFlight);
    if (this.#opts.dryRun === true) return this.#report(due);
    if (this.#stopped !== undefined) return;
    const mine = due.filter((r) => this.#opts.mayRenew(r.identity));
    if (mine.length === 0 && inFlight === 0) this.#round = undefined;
    if (this.#round === undefined) {
      const canary = mine[0];
      if (canary === undefined) return;
      this.#round = { canary: canary.identity, canaryBack: false };
      this.#opts.logger.info(`Starting a renewal round with ${canary.identity} as its canary (${due.length} due)`);
      return this.#start(canary);
    }
    if (!this.#round.canaryBack) return;
    const room = Math.max(0, this.#opts.settings.concurrency - inFlight);
    for (const r of mine.slice(0, room)) this.#start(r);
  }

  /** Sends `reprovision` without holding up the next look; `settled()` waits for the sends in progress. */
  #start(r: NodeRecord): void {
    const sending = this.#send(r).catch((err: unknown) => {
      this.#opts.logger.warn(`Renewal of ${r.identity}: ${err instanceof Error ? err.message : String(err)}`);
    });
    this.#sending.add(sending);
    void sending.finally(() => this.#sending.delete(sending));
  }

  /** Resolves once the sends in progress have ended (a stopping provisioner waits for them). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#sending]);
  }

  /** One pass over the site's nodes: those due (soonest first) and those in flight. */
  #look(now: number): { due: NodeRecord[]; inFlight: NodeRecord[] } {
    const s = this.#opts.settings;
    const due: { r: NodeRecord; at: number }[] = [];
    const inFlight: NodeRecord[] = [];
    for (const r of this.#opts.history.records()) {
      const state = renewalState(r, now, s);
      if (state === 'in-flight') inFlight.push(r);
      else if (state === 'due') due.push({ r, at: renewalDueAt(r, s) ?? now });
    }
    return { due: due.sort((a, b) => a.at - b.at).map((d) => d.r), inFlight };
  }

  /** Renewals that ended since the last look: provisioned again, or (of `inFlight`) not back in time. */
  #noteEnded(inFlight: readonly NodeRecord[], now: number): void {
    for (const [identity, sent] of this.#sent) {
      const r = this.#opts.history.get(identity);
      if (r === undefined || r.renewalSentAt === sent.sentAt) continue;
      this.#sent.delete(identity);
      if (r.renewalError !== undefined) continue;
      if ((r.credentialsExpireAt ?? 0) <= sent.expiresAt) {
        this.#failed(identity, 'provisioned again without credentials that expire later', now, false);
        continue;
      }
      this.#opts.metrics.renewal('completed');
      this.#failuresInRow = 0;
      if (this.#round?.canary === identity) this.#round.canaryBack = true;
      this.#opts.logger.info(`Renewed ${identity}: provisioned again, its credentials now expire ${iso(r)}`);
    }
    const limit = this.#opts.settings.returnTimeoutMs;
    for (const r of inFlight) {
      if (!this.#opts.mayRenew(r.identity) || now - (r.renewalSentAt ?? now) <= limit) continue;
      const unanswered = this.#sent.get(r.identity)?.unanswered;
      const silent = unanswered === undefined ? '' : `, which it did not answer (${unanswered})`;
      this.#failed(r.identity, `not provisioned again within ${formatMs(limit)} of reprovision${silent}`, now, true);
    }
  }

  async #send(r: NodeRecord): Promise<void> {
    const identity = r.identity;
    const sentAt = this.#now();
    const recorded = this.#opts.history.renewalSending(
      identity,
      sentAt,
      this.#opts.recordWaitMs ?? SENDING_RECORD_WAIT_MS,
    );
    if (recorded === undefined) return;
    const sent: SentReprovision = { sentAt, expiresAt: r.credentialsExpireAt ?? 0 };
    this.#sent.set(identity, sent);
    await recorded;
    if (!this.#opts.mayRenew(identity)) {
      this.#failed(identity, 'this instance lost its right to act before reprovision went out', sentAt, false);
      return;
    }
    const answer = await this.#opts.reprovision(identity);
    if (answer.kind === 'refused')
      return this.#failed(identity, `refused reprovision: ${answer.reason}`, sentAt, false);
    this.#opts.metrics.renewal('sent');
    if (answer.kind === 'no-reply') {
      sent.unanswered = answer.reason;
      this.#opts.logger.warn(`Sent reprovision to ${identity} for its renewal, no reply: ${answer.reason}`);
    } else this.#opts.logger.info(`Sent reprovision to ${identity}: its credentials expire ${iso(r)}`);
  }

  /** A failed renewal: recorded, counted, and it stops the renewals when it must. */
  #failed(identity: string, reason: string, at: number, stopsRound: boolean): void {
    this.#sent.delete(identity);
    this.#opts.history.renewalFailed(identity, at, reason);
    this.#opts.metrics.renewal('failed');
    this.#failuresInRow++;
    this.#opts.logger.warn(`Renewal of ${identity} failed: ${reason}`);
    // a failed canary ends its round: the next one starts with a new canary
    if (this.#round?.canary === identity) this.#round = undefined;
    const limit = this.#opts.settings.failureLimit;
    if (!stopsRound && this.#failuresInRow < limit) return;
    // without the identity: the status shows why to anyone, the nodes only to the site's token
    this.#stopped = stopsRound
      ? `a node's renewal failed: ${reason}`
      : `${this.#failuresInRow} renewals failed in a row, the last: ${reason}`;
    this.#round = undefined;
    this.#opts.logger.error(`Stopped the renewals until an operator resumes them, after ${identity}: ${this.#stopped}`);
  }

  /** The site's renewals as this instance sees them: counts, and up to `limit` nodes of each kind. */
  view(limit: number): RenewalView {
    const now = this.#now();
    const s = this.#opts.settings;
    const counts = { 'not-renewable': 0, scheduled: 0, due: 0, 'in-flight': 0, failed: 0 };
    const lists: Record<'next' | 'inFlight' | 'failed' | 'notRenewable', RenewalEntry[]> = {
      next: [],
      inFlight: [],
      failed: [],
      notRenewable: [],
    };
    const listOf: Record<Exclude<RenewalState, 'none'>, RenewalEntry[]> = {
      due: lists.next,
      scheduled: lists.next,
      'in-flight': lists.inFlight,
      failed: lists.failed,
      'not-renewable': lists.notRenewable,
    };
    for (const r of this.#opts.history.records()) {
      const state = renewalState(r, now, s);
      if (state === 'none') continue;
      counts[state]++;
      const entry: RenewalEntry = {
        identity: r.identity,
        state,
        expiresAt: isoOf(r.credentialsExpireAt ?? 0),
        ...(state === 'scheduled' || state === 'due' ? { dueAt: isoOf(renewalDueAt(r, s) ?? 0) } : {}),
        ...(r.renewalSentAt !== undefined ? { sentAt: isoOf(r.renewalSentAt), sentBy: r.renewalSentBy } : {}),
        ...(state === 'failed'
          ? { reason: r.renewalError }
          : state === 'not-renewable'
            ? { reason: r.notRenewable }
            : {}),
      };
      listOf[state].push(entry);
    }
    lists.next.sort((a, b) => (a.dueAt ?? '').localeCompare(b.dueAt ?? ''));
    const cut = (l: RenewalEntry[]): RenewalEntry[] => l.slice(0, limit);
    return {
      stopped: this.#stopped,
      counts,
      next: cut(lists.next),
      inFlight: cut(lists.inFlight),
      failed: cut(lists.failed),
      notRenewable: cut(lists.notRenewable),
    };
  }

  #report(due: readonly NodeRecord[]): void {
    for (const r of due) {
      if (this.#reported.get(r.identity) === r.credentialsExpireAt) continue;
      this.#reported.set(r.identity, r.credentialsExpireAt ?? 0);
      this.#opts.logger.info(`Dry run: would send reprovision to ${r.identity} (its credentials expire ${iso(r)})`);
    }
  }
}

const isoOf = (ms: number): string => new Date(ms).toISOString();

const iso = (r: NodeRecord): string =>
  r.credentialsExpireAt === undefined ? 'never' : `at ${new Date(r.credentialsExpireAt).toISOString()}`;

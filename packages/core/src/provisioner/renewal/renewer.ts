// Renews the credentials of a site's provisioned nodes before they expire: at each node's time
// (plan.ts) it sends the node `choria_provision#reprovision` on the fleet's own collective; the node
// restarts into provisioning mode and the site provisions it again, which ends the renewal (its
// history record then names a later generation and the new credentials).
//
// The renewer decides when and to whom `reprovision` goes, in rounds shared by every instance of
// the site (round.ts): a round starts with one node, the canary, and goes on only once the canary
// is provisioned again; then up to `concurrency` nodes of the site renew at once, each holding a
// slot of the shared round, taken with compare-and-set before anything is recorded or sent. A node
// not provisioned again within `returnTimeoutMs` fails its renewal and stops the renewals, as do
// `failureLimit` failures in a row (a refused `reprovision`, say): nothing more is sent until an
// operator resumes them, and an error says so at an interval until then. Every `reprovision` is
// recorded in the node's history before it goes, as a change that holds only for the generation
// and credentials seen due (record-changes.ts), so neither another instance nor a stale view sends
// it twice, and a failure is counted only when its record holds on the shared copy. Which instance
// may renew which node is the site's own rule (`mayRenew`).
import type { Logger } from 'winston';
import type { RenewalSettings } from '../../config/types.js';
import type { RenewalEvent } from '../../metrics/metrics.js';
import { formatMs } from '../../util/duration.js';
import type { NodeHistory } from '../history/index.js';
import type { NodeRecord } from '../history/record.js';
import type { ChangeEnd } from '../history/shared-records.js';
import { SENDING_RECORD_WAIT_MS } from '../lease.js';
import { renewalDueAt, renewalState } from './plan.js';
import {
  basisOf,
  renewalCleared,
  renewalFailed,
  renewalFellShort,
  renewalLost,
  renewalSent,
  renewalWithdrawn,
  type RenewalBasis,
} from './record-changes.js';
import { RoundStore, roundChanges, type RenewalSlot } from './round.js';
import { renewalView, type RenewalView } from './view.js';

export type { RenewalEntry, RenewalView } from './view.js';

/** How a `reprovision` went: the node took it, refused it (go-choria's reason), or did not answer. */
export type ReprovisionAnswer =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'no-reply'; readonly reason: string };

/** What a ping on the fleet's collective found (RenewerOptions.answersOnFleet). */
export type FleetAnswer = 'answers' | 'silent' | 'unknown';

export interface RenewerMetrics {
  renewal(event: RenewalEvent): void;
  setRenewals(due: number, inFlight: number, stopped: boolean): void;
}

export interface RenewerOptions {
  readonly settings: RenewalSettings;
  readonly history: NodeHistory;
  readonly logger: Logger;
  readonly metrics: RenewerMetrics;
  /** this instance may send `reprovision` to the node now (running, not paused, its right to act, its node) */
  readonly mayRenew: (identity: string) => boolean;
  readonly reprovision: (identity: string) => Promise<ReprovisionAnswer>;
  /**
   * Whether the node answers on the fleet's collective: one sent `reprovision` that reached it has
   * restarted into provisioning mode within seconds and no longer does. 'unknown' while the
   * renewal client's own link is not settled (default: never asked, taken as silent)
   */
  readonly answersOnFleet?: (identity: string) => Promise<FleetAnswer>;
  /** a dry run: says what it would send, sends nothing */
  readonly dryRun?: boolean;
  readonly now?: () => number;
  /** how long a `reprovision` waits for its record to reach the shared history (default: as a configure's) */
  readonly recordWaitMs?: number;
  /** the site's round (default: one of this instance's own, until a shared copy is attached to it) */
  readonly round?: RoundStore;
  /** how often an error says that the renewals are stopped (default STOPPED_SAY_MS) */
  readonly stoppedSayMs?: number;
}

/** How often a stopped renewal says so, as an error with what expires next. */
export const STOPPED_SAY_MS = 60_000;
/** A slot for which no `reprovision` was ever recorded (its taker died) is given back after this. */
export const UNUSED_SLOT_MS = 45_000;
/**
 * A `reprovision` without a reply is checked this long after it went: go-choria restarts 2 to 11 s
 * after it took one, so a node still answering on the fleet's collective then never got it.
 */
export const LOST_CHECK_MS = 20_000;
/** How often a node's `reprovision` is sent again after it was lost before its renewal fails. */
export const MAX_LOST_SENDS = 3;
/**
 * A node that came back into provisioning mode but is not provisioned again yet (another
 * provisioner's lock, faults) fails only after this many return timeouts.
 */
export const CAME_BACK_LIMITS = 3;
/** A node not back in time fails only when it was silent on the fleet twice, this far apart. */
export const SILENT_RECHECK_MS = 10_000;
const DAY_MS = 86_400_000;

/** A `reprovision` this instance sent: when, the facts it renews, and why it had no answer if it had none. */
interface SentReprovision {
  readonly sentAt: number;
  readonly basis: RenewalBasis;
  unanswered?: string;
  /** whether it was checked for a lost `reprovision` already */
  checked?: boolean;
}

export class Renewer {
  readonly #opts: RenewerOptions;
  readonly #now: () => number;
  readonly #round: RoundStore;
  /** `reprovision` this instance sent and has not seen end, by identity */
  readonly #sent = new Map<string, SentReprovision>();
  /** nodes whose failure is being recorded (it counts once the shared copy has it) */
  readonly #judging = new Set<string>();
  /** how often each node's `reprovision` was found lost and sent again */
  readonly #lost = new Map<string, number>();
  /** nodes not back in time found silent on the fleet once, and when */
  readonly #silent = new Map<string, number>();
  /** dry run: the nodes already reported, by the expiry they were reported for */
  readonly #reported = new Map<string, number>();
  readonly #sending = new Set<Promise<void>>();
  #saidStoppedAt: number | undefined;
  #ticking = false;

  constructor(opts: RenewerOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#round = opts.round ?? new RoundStore();
  }

  get stopped(): string | undefined {
    return this.#round.round.stopped;
  }

  /** An operator resumes stopped renewals: the failed ones are due again. */
  resume(): number {
    const now = this.#now();
    this.#round.change(roundChanges.resumed());
    this.#saidStoppedAt = undefined;
    const history = this.#opts.history;
    const failed = [...history.records()].filter((r) => r.renewalError !== undefined);
    for (const r of failed) history.change(r.identity, renewalCleared(now));
    this.#opts.logger.info(`Renewals resumed; ${failed.length} failed renewal(s) are due again`);
    return failed.length;
  }

  /** One look at the site's nodes: ends what ended, tends the round, starts sending what is due. */
  tick(): void {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      void this.#round.refresh();
      this.#tick();
    } finally {
      this.#ticking = false;
    }
  }

  #tick(): void {
    const now = this.#now();
    const { due, inFlight, soon } = this.#look(now);
    this.#noteEnded(inFlight, now);
    const round = this.#round.round;
    this.#opts.metrics.setRenewals(due.length, inFlight.length, round.stopped !== undefined);
    if (this.#opts.dryRun === true) return this.#report(due);
    this.#tendRound(due.length + inFlight.length + soon, now);
    if (round.stopped !== undefined) return this.#sayStopped(round.stopped, now);
    const taken = new Set(this.#round.round.slots.map((s) => s.identity));
    const mine = due.filter(
      (r) => !taken.has(r.identity) && !this.#sent.has(r.identity) && this.#opts.mayRenew(r.identity),
    );
    const r = this.#round.round;
    if (r.canary === undefined) {
      const canary = mine[0];
      if (canary !== undefined && this.#take(canary, true, now))
        this.#opts.logger.info(`Starting a renewal round with ${canary.identity} as its canary (${due.length} due)`);
      return;
    }
    if (!r.canaryBack) return;
    const room = Math.max(0, this.#opts.settings.concurrency - r.slots.length);
    for (const node of mine.slice(0, room)) this.#take(node, false, now);
  }

  /** Resolves once the sends in progress have ended (a stopping provisioner waits for them). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#sending]);
  }

  /**
   * One pass over the site's nodes: those due (soonest first), those in flight, and how many more
   * fall due within a return timeout. A round stays open while any do: a fleet provisioned in one
   * burst falls due over its renewal window, and a round that ended whenever its slots emptied
   * would wait for a new canary between every few nodes, and run out of time under faults.
   */
  #look(now: number): { due: NodeRecord[]; inFlight: NodeRecord[]; soon: number } {
    const s = this.#opts.settings;
    const due: { r: NodeRecord; at: number }[] = [];
    const inFlight: NodeRecord[] = [];
    let soon = 0;
    for (const r of this.#opts.history.records()) {
      const state = renewalState(r, now, s);
      if (state === 'in-flight') inFlight.push(r);
      else if (state === 'due') due.push({ r, at: renewalDueAt(r, s) ?? now });
      else if (state === 'scheduled' && (renewalDueAt(r, s) ?? Infinity) <= now + s.returnTimeoutMs) soon++;
    }
    return { due: due.sort((a, b) => a.at - b.at).map((d) => d.r), inFlight, soon };
  }

  /**
   * Gives back the slots whose node's history says they are done (provisioned again, failed, or
   * never sent `reprovision` by a taker that died), marks the canary back, and ends a
   * round with nothing left in it. Any instance may: each change holds only on the facts it saw.
   */
  #tendRound(pending: number, now: number): void {
    const r = this.#round.round;
    const history = this.#opts.history;
    const done = r.slots.filter((slot) => {
      const rec = history.get(slot.identity);
      if (rec === undefined) return true;
      const generation = rec.generation ?? 0;
      if (generation > slot.generation) return true;
      if (rec.renewalError !== undefined) return true;
      return rec.renewalSentAt === undefined && now - slot.takenAt > UNUSED_SLOT_MS;
    });
    if (done.length > 0) this.#round.change(roundChanges.giveBack(done));
    const canary = r.canary;
    if (canary !== undefined && !r.canaryBack) {
      const rec = history.get(canary.identity);
      if (rec !== undefined && (rec.generation ?? 0) > canary.generation && rec.renewalError === undefined)
        this.#round.change(roundChanges.canaryBack(canary.identity, canary.generation));
    }
    if (canary !== undefined && r.slots.length === done.length && pending === 0)
      this.#round.change(roundChanges.ended(canary.identity));
  }

  /** Takes a slot of the round for `node` and, once the shared round has it, renews the node. */
  #take(node: NodeRecord, asCanary: boolean, now: number): boolean {
    const slot: RenewalSlot = {
      identity: node.identity,
      generation: node.generation ?? 0,
      takenAt: now,
      takenBy: this.#opts.history.instance,
    };
    const change = this.#round.change(roundChanges.take(slot, asCanary, this.#opts.settings.concurrency));
    if (!change.applied) return false;
    this.#start(node, async () => {
      const how = await this.#bounded(change.ended);
      if (how !== 'written' && how !== 'local') {
        if (how === undefined) this.#round.change(roundChanges.giveBack([slot], asCanary));
        return;
      }
      if (!(await this.#send(node, slot))) this.#round.change(roundChanges.giveBack([slot], asCanary));
    });
    return true;
  }

  /** Runs a renewal without holding up the next look; `settled()` waits for those in progress. */
  #start(node: NodeRecord, run: () => Promise<void>): void {
    this.#track(run, node.identity);
  }

  /** Runs `run` in the background; `settled()` waits for it. */
  #track(run: () => Promise<void>, identity?: string): void {
    const sending = run().catch((err: unknown) => {
      this.#opts.logger.warn(`Renewal of ${identity ?? 'a node'}: ${err instanceof Error ? err.message : String(err)}`);
    });
    this.#sending.add(sending);
    void sending.finally(() => this.#sending.delete(sending));
  }

  /** `ended`, or undefined once the record wait has run out. */
  async #bounded(ended: Promise<ChangeEnd>): Promise<ChangeEnd | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const waitMs = this.#opts.recordWaitMs ?? SENDING_RECORD_WAIT_MS;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), waitMs)));
    try {
      return await Promise.race([ended, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Records `reprovision` in the node's history (for the facts seen due), and sends it once the
   * shared copy has the record and this instance may still act. Returns false when nothing was
   * sent (the slot goes back).
   */
  async #send(node: NodeRecord, slot: RenewalSlot): Promise<boolean> {
    const { history, logger } = this.#opts;
    const identity = node.identity;
    const basis = basisOf(node);
    const sentAt = this.#now();
    if (history.shared && !history.sharedCopyIsPrompt()) return false;
    const handle = history.change(identity, renewalSent(basis, sentAt, history.instance));
    if (handle.after === undefined) return false;
    const recorded = history.shared
      ? await history.waitFor(identity, handle, this.#opts.recordWaitMs ?? SENDING_RECORD_WAIT_MS)
      : 'written';
    const held = this.#round.round.slots.some((s) => s.identity === identity && s.takenAt === slot.takenAt);
    if (recorded !== 'written' || !held || !this.#opts.mayRenew(identity)) {
      history.change(identity, renewalWithdrawn(sentAt, history.instance, this.#now()));
      return false;
    }
    const sent: SentReprovision = { sentAt, basis };
    this.#sent.set(identity, sent);
    const answer = await this.#opts.reprovision(identity);
    if (answer.kind === 'refused') {
      this.#sent.delete(identity);
      this.#judge(identity, renewalFailed(sentAt, `refused reprovision: ${answer.reason}`, sentAt), false);
      return true;
    }
    this.#opts.metrics.renewal('sent');
    if (answer.kind === 'no-reply') {
      sent.unanswered = answer.reason;
      logger.warn(`Sent reprovision to ${identity} for its renewal, no reply: ${answer.reason}`);
    } else logger.info(`Sent reprovision to ${identity}: its credentials expire ${isoAt(basis.expiresAt)}`);
    return true;
  }

  /** Renewals that ended since the last look: provisioned again, or (of `inFlight`) not back in time. */
  #noteEnded(inFlight: readonly NodeRecord[], now: number): void {
    for (const [identity, sent] of this.#sent) {
      const r = this.#opts.history.get(identity);
      const generation = r?.generation ?? 0;
      if (r !== undefined && generation <= sent.basis.generation && r.renewalSentAt === sent.sentAt) continue;
      this.#sent.delete(identity);
      // withdrawn, failed, lost, cleared by a resume, or forgotten: nothing more to note here
      if (r === undefined || generation <= sent.basis.generation) continue;
      this.#lost.delete(identity);
      if ((r.credentialsExpireAt ?? 0) <= sent.basis.expiresAt) {
        const why = 'provisioned again without credentials that expire later';
        this.#judge(identity, renewalFellShort(generation, why, now), false);
        continue;
      }
      this.#opts.metrics.renewal('completed');
      this.#round.change(roundChanges.completed());
      this.#opts.logger.info(`Renewed ${identity}: provisioned again, its credentials now expire ${iso(r)}`);
    }
    const limit = this.#opts.settings.returnTimeoutMs;
    for (const r of inFlight) {
      const sentAt = r.renewalSentAt ?? now;
      if (this.#judging.has(r.identity) || !this.#opts.mayRenew(r.identity)) continue;
      const silentAt = this.#silent.get(r.identity);
      if (silentAt !== undefined && now - silentAt < SILENT_RECHECK_MS) continue;
      const sent = this.#sent.get(r.identity);
      // unanswered: was it lost on the way? (late: before it fails)
      const early = sent?.unanswered !== undefined && sent.checked !== true && now - sentAt > LOST_CHECK_MS;
      if (early && sent !== undefined) sent.checked = true;
      const overdue = now - sentAt > limit;
      if (early || overdue) this.#checkLost(r.identity, sentAt, now, overdue);
    }
  }

  /**
   * A renewal not back: a node that still answers on the fleet's collective never got its
   * `reprovision` (lost with the broker or on a silent path), so the renewal is due again, up to
   * MAX_LOST_SENDS times; otherwise, when `late`, the renewal failed.
   */
  #checkLost(identity: string, sentAt: number, now: number, late: boolean): void {
    this.#judging.add(identity);
    const limit = this.#opts.settings.returnTimeoutMs;
    this.#track(async () => {
      const answer = (await this.#opts.answersOnFleet?.(identity).catch(() => 'unknown' as const)) ?? 'silent';
      const lost = this.#lost.get(identity) ?? 0;
      const answers = answer === 'answers';
      this.#judging.delete(identity);
      // this instance's own way to the fleet is down or not settled: the next look asks again
      if (answer === 'unknown') return;
      if (answers && lost < MAX_LOST_SENDS) {
        this.#silent.delete(identity);
        const change = this.#opts.history.change(identity, renewalLost(sentAt, this.#now()));
        if (change.after === undefined) return;
        this.#lost.set(identity, lost + 1);
        this.#sent.delete(identity);
        this.#round.change(roundChanges.release(identity));
        this.#opts.logger.warn(
          `The reprovision of ${identity} was lost: it still answers on the fleet's collective ` +
            `${formatMs(now - sentAt)} after it was sent; sending it again`,
        );
        return;
      }
      if (!late) return;
      // it came back into provisioning mode (an attempt on it ended since): provisioning is slow
      // (another provisioner's lock, faults), the renewal has not failed; given up to CAME_BACK_LIMITS
      if (this.#cameBack(identity, sentAt) && now - sentAt <= CAME_BACK_LIMITS * limit) return;
      // silent twice, SILENT_RECHECK_MS apart (a silent path of a moment is not the node's)
      if (!answers && !this.#silent.has(identity)) return void this.#silent.set(identity, now);
      this.#silent.delete(identity);
      const unanswered = this.#sent.get(identity)?.unanswered;
      const silent = unanswered === undefined ? '' : `, which it did not answer (${unanswered})`;
      const still = answers ? `; it still answers on the fleet's collective after ${lost + 1} sends` : '';
      const why = `not provisioned again within ${formatMs(limit)} of reprovision${silent}${still}`;
      this.#judge(identity, renewalFailed(sentAt, why, now), this.#leftItsConfiguration(identity, sentAt));
    });
  }

  /**
   * Whether a renewal not back stops the renewals at once: the node was the round's canary, or
   * something shows that `reprovision` took it out of its configuration (it answered the request
   * here, or it came back into provisioning mode) and it was not provisioned again, so what
   * `reprovision` does to this fleet is in doubt. A node with no sign that it ever got the request
   * (its sender died between recording and sending it, the broker lost it, the node was cut off)
   * says nothing about the fleet: its failure counts toward `renewal_failure_limit` like a refusal.
   */
  #leftItsConfiguration(identity: string, sentAt: number): boolean {
    const round = this.#round.round;
    if (round.canary?.identity === identity && !round.canaryBack) return true;
    const sent = this.#sent.get(identity);
    return (sent !== undefined && sent.unanswered === undefined) || this.#cameBack(identity, sentAt);
  }

  /** Whether an attempt on the node ended after its `reprovision` was sent: it came back into provisioning mode. */
  #cameBack(identity: string, sentAt: number): boolean {
    return (this.#opts.history.get(identity)?.attemptAt ?? 0) > sentAt;
  }

  /**
   * A renewal failed, by what this instance saw: the failure is recorded as a change that holds
   * only on those facts, and counted (possibly stopping the renewals) once the shared copy has it.
   */
  #judge(identity: string, change: (b: NodeRecord | undefined) => NodeRecord | undefined, stopsRound: boolean): void {
    const handle = this.#opts.history.change(identity, change);
    const reason = handle.after?.renewalError;
    if (reason === undefined) return;
    this.#judging.add(identity);
    void handle.ended.then((how) => {
      this.#judging.delete(identity);
      if (how === 'written' || how === 'local') this.#failed(identity, reason, stopsRound);
    });
  }

  /** A failed renewal: counted, and it stops the renewals when it must. */
  #failed(identity: string, reason: string, stopsRound: boolean): void {
    this.#sent.delete(identity);
    this.#opts.metrics.renewal('failed');
    this.#opts.logger.warn(`Renewal of ${identity} failed: ${reason}`);
    const limit = this.#opts.settings.failureLimit;
    // without the identity: the status shows why to anyone, the nodes only to the site's token
    const why = (n: number): string =>
      stopsRound ? `a node's renewal failed: ${reason}` : `${n} renewals failed in a row, the last: ${reason}`;
    const wasStopped = this.#round.round.stopped !== undefined;
    this.#round.change(roundChanges.failed(identity, stopsRound ? 0 : limit, why));
    const stopped = this.#round.round.stopped;
    if (!wasStopped && stopped !== undefined)
      this.#opts.logger.error(`Stopped the renewals until an operator resumes them, after ${identity}: ${stopped}`);
  }

  /** While the renewals are stopped: an error at an interval, with what expires in the next day. */
  #sayStopped(stopped: string, now: number): void {
    const every = this.#opts.stoppedSayMs ?? STOPPED_SAY_MS;
    if (this.#saidStoppedAt !== undefined && now - this.#saidStoppedAt < every) return;
    this.#saidStoppedAt = now;
    let count = 0;
    let first = Infinity;
    for (const r of this.#opts.history.records()) {
      const at = r.credentialsExpireAt;
      if (at === undefined || at <= now || at > now + DAY_MS) continue;
      count++;
      first = Math.min(first, at);
    }
    const soon = count === 0 ? 'no server' : `${count} server(s), the first at ${new Date(first).toISOString()}`;
    this.#opts.logger.error(
      `Renewals are stopped (${stopped}): ${soon} will have expired credentials within a day. ` +
        `Mend the cause, then resume them (POST /renewals/resume or \`choria-provisioner renewals resume\`; ` +
        `docs/renewal.md)`,
    );
  }

  /** The site's renewals as this instance sees them: counts, and up to `limit` nodes of each kind. */
  view(limit: number): RenewalView {
    const stopped = this.#round.round.stopped;
    return renewalView(this.#opts.history.records(), this.#now(), this.#opts.settings, stopped, limit);
  }

  #report(due: readonly NodeRecord[]): void {
    for (const r of due) {
      if (this.#reported.get(r.identity) === r.credentialsExpireAt) continue;
      this.#reported.set(r.identity, r.credentialsExpireAt ?? 0);
      this.#opts.logger.info(`Dry run: would send reprovision to ${r.identity} (its credentials expire ${iso(r)})`);
    }
  }
}

const isoAt = (ms: number): string => (ms === 0 ? 'never' : `at ${new Date(ms).toISOString()}`);
const iso = (r: NodeRecord): string => isoAt(r.credentialsExpireAt ?? 0);

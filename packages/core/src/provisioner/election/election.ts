// Leader election on the Choria Streams KV bucket, wire-compatible with the Go
// provisioner's go-choria election: same bucket, key, value (the identity), create/update with
// expected revisions and the same TwentySec campaign back-off, so TypeScript and Go instances can
// share one election.
import type { NatsConnection } from 'nats';
import type { Logger } from 'winston';
import { ABORTED, abortableSleep, untilAborted } from './abortable.js';
import { DEFAULT_BACKOFF, TWENTY_SEC, backoffDelay } from '../../util/backoff.js';
import { formatMs } from '../../util/duration.js';
import {
  CHORIA_STREAMS_API_PREFIX,
  DEFAULT_ELECTION_BUCKET,
  DEFAULT_ELECTION_KEY,
  DEFAULT_KV_REQUEST_TIMEOUT_MS,
  ElectionKvError,
  bucketTtlMs,
  create,
  update,
  type KvKeyRef,
} from './kv-campaign.js';
import { electionTtlProblem } from './ttl.js';
import { errorText } from '../../util/values.js';

/** `unknown` before the bucket is usable and after stop (as upstream's UnknownState), then candidate/leader. */
export type ElectionState = 'unknown' | 'candidate' | 'leader';
export type CampaignState = 'candidate' | 'leader';

export interface LeaderElectionOptions {
  nc: NatsConnection;
  /** the value written to the key: the provisioner's Choria identity */
  identity: string;
  /** election key, default `provisioner` */
  key?: string;
  /** KV bucket, default CHORIA_LEADER_ELECTION */
  bucket?: string;
  /** JetStream API prefix, default `choria.streams`; `$JS.API` for an account with JetStream itself */
  apiPrefix?: string;
  logger: Logger;
  /** called once per won term, ~200 ms after the first successful refresh following the win */
  onWon: () => void;
  /** called when a refresh of an announced leadership fails */
  onLost: () => void;
  /** [0, 1) source for splay and back-off jitter, default Math.random */
  random?: () => number;
  /** maximum initial splay in ms, default 5000 (a random 0..splayMs-1 wait before the first campaign) */
  splayMs?: number;
  /** after every campaign: the state it campaigned in and whether its request succeeded (for metrics) */
  onCampaign?: (state: CampaignState, ok: boolean) => void;
  /** the wait before the next campaign, in seconds (choria_election_interval_seconds) */
  onIntervalChange?: (seconds: number) => void;
  /** timeout of each NATS request, default 2 s */
  requestTimeoutMs?: number;
}

const WIN_ANNOUNCE_DELAY_MS = 200;
const DEFAULT_SPLAY_MS = 5_000;
/**
 * A leader whose refresh could not reach the bucket stops this long before its key can expire.
 * Another instance can only win once the key expired (its create expects no key), so until then
 * this one is still the only possible leader.
 */
const HOLD_MARGIN_MS = 2_000;

/**
 * Whether a failed refresh says nothing about who holds the key: the request never got an answer
 * (no responders while a JetStream cluster moves its stream leader after a member died, a timeout,
 * a connection between brokers). An answer that refuses the write (another revision) is a loss.
 */
function refreshUnanswered(err: unknown): boolean {
  return (
    err instanceof ElectionKvError &&
    (err.kind === 'no-responders' || err.kind === 'timeout' || err.kind === 'request-failed')
  );
}

export class LeaderElection {
  readonly #nc: NatsConnection;
  readonly #identity: string;
  readonly #ref: KvKeyRef & { key: string; bucket: string };
  readonly #logger: Logger;
  readonly #onWon: () => void;
  readonly #onLost: () => void;
  readonly #random: () => number;
  readonly #splayMs: number;
  readonly #onCampaign: ((state: CampaignState, ok: boolean) => void) | undefined;
  readonly #onIntervalChange: ((seconds: number) => void) | undefined;

  #state: ElectionState = 'unknown';
  #lastSeq: number | undefined;
  /** failed creates since the last win: selects the TwentySec step */
  #tries = 0;
  /** won the key but not yet announced: announced after the next successful refresh */
  #winPending = false;
  /** onWon was delivered for the current term */
  #announced = false;
  /** the bucket's TTL, read before campaigning */
  #ttlMs = 0;
  /** when the last write that holds the key was sent (performance.now()): it expires no sooner than TTL after */
  #heldSince = 0;
  /** a refresh failed unanswered and the key is held on the strength of the last good one */
  #holding = false;
  /** until when (performance.now()) this instance may act as the leader: see leaseEndsAt */
  #leaseEnd = 0;
  #started = false;
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(opts: LeaderElectionOptions) {
    if (opts.identity.trim() === '') throw new Error('leader election needs a non-empty identity');
    const splay = opts.splayMs ?? DEFAULT_SPLAY_MS;
    if (!Number.isFinite(splay) || splay < 0) throw new Error(`invalid leader election splay ${splay} ms`);
    this.#nc = opts.nc;
    this.#identity = opts.identity;
    this.#ref = {
      apiPrefix: opts.apiPrefix ?? CHORIA_STREAMS_API_PREFIX,
      bucket: opts.bucket ?? DEFAULT_ELECTION_BUCKET,
      key: opts.key ?? DEFAULT_ELECTION_KEY,
      timeoutMs: opts.requestTimeoutMs ?? DEFAULT_KV_REQUEST_TIMEOUT_MS,
    };
    this.#logger = opts.logger;
    this.#onWon = opts.onWon;
    this.#onLost = opts.onLost;
    this.#random = opts.random ?? Math.random;
    this.#splayMs = splay;
    this.#onCampaign = opts.onCampaign;
    this.#onIntervalChange = opts.onIntervalChange;
  }

  get state(): ElectionState {
    return this.#state;
  }

  /** true only once the win was announced through onWon (as upstream's IsLeader) */
  get isLeader(): boolean {
    return this.#state === 'leader' && this.#announced;
  }

  /**
   * Until when (performance.now()) this instance may act as the leader: no other instance can
   * create the key before it expires, a TTL after the broker stored the last write that held it,
   * which was no earlier than that write was sent; less HOLD_MARGIN_MS for delivery. 0 once
   * leadership was lost. stop() leaves it as it was: a stopping leader may finish its in-flight
   * work while the key it wrote still keeps everyone else out.
   */
  leaseEndsAt(): number {
    return this.#state === 'leader' || this.#abort === undefined ? this.#leaseEnd : 0;
  }

  /** revision of the key written by this instance while it holds it */
  get lastSequence(): number | undefined {
    return this.#lastSeq;
  }

  /** Begins campaigning in the background; an election is started at most once. */
  start(): void {
    if (this.#started)
      throw new Error(`leader election ${this.#ref.key} in bucket ${this.#ref.bucket} was already started`);
    this.#started = true;
    const abort = new AbortController();
    this.#abort = abort;
    this.#loop = this.#run(abort.signal).catch((err: unknown) => {
      this.#logger.error(`Leader election ${this.#ref.key} stopped unexpectedly: ${errorText(err)}`, {
        election: this.#ref.key,
        bucket: this.#ref.bucket,
      });
    });
  }

  /**
   * Stops campaigning at once (pending waits and requests are abandoned). Like upstream it neither
   * deletes the key (a standby takes over once it expires) nor calls onLost; it resolves to whether
   * this instance was the announced leader, so the caller can do its own hand-over.
   */
  async stop(): Promise<boolean> {
    const wasLeader = this.isLeader;
    const abort = this.#abort;
    if (abort === undefined) return false;
    this.#abort = undefined;
    abort.abort();
    await this.#loop;
    this.#state = 'unknown';
    this.#lastSeq = undefined;
    this.#winPending = false;
    this.#announced = false;
    this.#holding = false;
    return wasLeader;
  }

  async #run(signal: AbortSignal): Promise<void> {
    const ttlMs = await this.#waitForUsableBucket(signal);
    if (ttlMs === undefined) return;
    this.#ttlMs = ttlMs;
    this.#state = 'candidate';
    // a random wait before the first campaign, as go-choria's elections do, so instances started
    // together do not all ask at once; said in the log since it is most of the time to a first win
    const splay = Math.floor(this.#random() * this.#splayMs);
    this.#logger.info(
      `Campaigning for leader election ${this.#ref.key} in bucket ${this.#ref.bucket} as ${this.#identity} ` +
        `(bucket TTL ${formatMs(ttlMs)}; first campaign after a random wait of ${splay} ms)`,
      { election: this.#ref.key, bucket: this.#ref.bucket, splayMs: splay },
    );
    if (!(await abortableSleep(splay, signal))) return;
    while (!signal.aborted) {
      await this.#campaign(signal);
      if (signal.aborted) return;
      const delay = backoffDelay(TWENTY_SEC, this.#tries, this.#random);
      this.#notify('onIntervalChange', () => this.#onIntervalChange?.(delay / 1_000));
      if (!(await abortableSleep(delay, signal))) return;
    }
  }

  /**
   * Reads and validates the bucket TTL, retrying with the Default back-off until it works or stop.
   * Deliberate improvement over upstream, which drops the error of a missing bucket and stays paused
   * forever without a word (and exits on a bad TTL): every failed attempt is logged at error level
   * with its reason, and the election recovers by itself once the broker creates or fixes the
   * bucket (it often appears 10-69 s after a broker start). A TTL outside 4 s..1 h is handled the
   * same way rather than rejecting start, so fixing the broker setting needs no provisioner restart.
   */
  async #waitForUsableBucket(signal: AbortSignal): Promise<number | undefined> {
    for (let attempt = 1; ; attempt++) {
      let reason: string;
      try {
        const ttl = await untilAborted(bucketTtlMs(this.#nc, this.#ref), signal);
        if (ttl === ABORTED) return undefined;
        const problem = electionTtlProblem(ttl);
        if (problem === undefined) return ttl;
        reason = `election bucket ${this.#ref.bucket} cannot be used: ${problem}`;
      } catch (err) {
        if (signal.aborted) return undefined;
        reason = errorText(err);
      }
      const delay = backoffDelay(DEFAULT_BACKOFF, attempt, this.#random);
      this.#logger.error(
        `Leader election failed to start (attempt ${attempt}, retrying in ${formatMs(delay)}): ${reason}`,
        {
          election: this.#ref.key,
          bucket: this.#ref.bucket,
          attempt,
        },
      );
      if (!(await abortableSleep(delay, signal))) return undefined;
    }
  }

  async #campaign(signal: AbortSignal): Promise<void> {
    if (this.#state === 'leader') await this.#maintainLeadership(signal);
    else await this.#campaignForLeadership(signal);
  }

  async #campaignForLeadership(signal: AbortSignal): Promise<void> {
    let seq: number;
    const sentAt = performance.now();
    try {
      const result = await untilAborted(create(this.#nc, this.#ref, this.#identity), signal);
      if (result === ABORTED) return;
      seq = result;
    } catch (err) {
      if (signal.aborted) return;
      // any failure counts as "someone else leads": a campaign that cannot tell must not act as leader
      this.#tries += 1;
      this.#logger.debug(`Campaign for ${this.#ref.key} failed (${this.#tries} since last win): ${errorText(err)}`, {
        election: this.#ref.key,
      });
      this.#notify('onCampaign', () => this.#onCampaign?.('candidate', false));
      return;
    }
    this.#lastSeq = seq;
    this.#heldSince = sentAt;
    this.#leaseEnd = sentAt + this.#ttlMs - HOLD_MARGIN_MS;
    this.#state = 'leader';
    this.#tries = 0;
    this.#winPending = true;
    this.#logger.debug(`Won key ${this.#ref.key} at revision ${seq}, announcing after the next refresh`, {
      election: this.#ref.key,
    });
    this.#notify('onCampaign', () => this.#onCampaign?.('candidate', true));
  }

  async #maintainLeadership(signal: AbortSignal): Promise<void> {
    const lastSeq = this.#lastSeq;
    let seq: number;
    const sentAt = performance.now();
    try {
      if (lastSeq === undefined) throw new Error('no revision recorded for the held key');
      const result = await untilAborted(update(this.#nc, this.#ref, this.#identity, lastSeq), signal);
      if (result === ABORTED) return;
      seq = result;
    } catch (err) {
      if (signal.aborted) return;
      if (this.#mayHold(err)) return;
      const wasAnnounced = this.#announced;
      this.#leaseEnd = 0;
      this.#state = 'candidate';
      this.#lastSeq = undefined;
      this.#winPending = false;
      this.#announced = false;
      this.#holding = false;
      this.#logger.warn(`Leadership of ${this.#ref.key} in bucket ${this.#ref.bucket} lost: ${errorText(err)}`, {
        election: this.#ref.key,
        bucket: this.#ref.bucket,
      });
      this.#notify('onCampaign', () => this.#onCampaign?.('leader', false));
      // onLost pairs with a delivered onWon; a win lost before it was announced changes nothing outside
      if (wasAnnounced) this.#notify('onLost', () => this.#onLost());
      return;
    }
    this.#lastSeq = seq;
    this.#heldSince = sentAt;
    this.#leaseEnd = sentAt + this.#ttlMs - HOLD_MARGIN_MS;
    if (this.#holding) {
      this.#holding = false;
      this.#logger.info(`Refreshed ${this.#ref.key} in bucket ${this.#ref.bucket} again: still the leader`, {
        election: this.#ref.key,
        bucket: this.#ref.bucket,
      });
    }
    this.#notify('onCampaign', () => this.#onCampaign?.('leader', true));
    if (!this.#winPending) return;
    this.#winPending = false;
    // gives a previous leader that has just lost the key time to stand down before we start working
    if (!(await abortableSleep(WIN_ANNOUNCE_DELAY_MS, signal))) return;
    this.#announced = true;
    this.#notify('onWon', () => this.#onWon());
  }

  /**
   * Whether a failed refresh leaves this instance the leader for now: the refresh got no answer at
   * all and the key written by the last good one cannot have expired yet (less the margin). Upstream
   * gives up at the first failure, which turns every JetStream hiccup (a cluster member dying, a
   * broker restarting) into a lost term and a TTL's wait for a new one.
   */
  #mayHold(err: unknown): boolean {
    const holdUntil = this.#heldSince + this.#ttlMs - HOLD_MARGIN_MS;
    if (!refreshUnanswered(err) || performance.now() >= holdUntil) return false;
    if (!this.#holding) {
      this.#holding = true;
      this.#logger.warn(
        `Could not refresh ${this.#ref.key} in bucket ${this.#ref.bucket} (${errorText(err)}); ` +
          `still the leader for up to ${formatMs(holdUntil - performance.now())} while retrying: ` +
          `the key cannot expire before then`,
        { election: this.#ref.key, bucket: this.#ref.bucket },
      );
    }
    this.#notify('onCampaign', () => this.#onCampaign?.('leader', false));
    return true;
  }

  /** A throwing callback must not end the campaign loop. */
  #notify(name: string, call: () => void): void {
    try {
      call();
    } catch (err) {
      this.#logger.error(`Leader election ${name} callback failed: ${errorText(err)}`, { election: this.#ref.key });
    }
  }
}

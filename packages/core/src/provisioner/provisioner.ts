// The Provisioner: one site's scheduler. It decides when nodes are looked for, which of them are
// queued and when a worker takes one; each rule it follows lives in a module named after it: the
// nodes and their states (active-list.ts), which nodes are this instance's (work-policy.ts), what
// an ended attempt leaves behind (record-outcome.ts), the election (leadership.ts), the
// connections (site-connection.ts), what it reports (site-status.ts, node-listing.ts). Nothing is
// module state, so several sites run in one process.
import { setMaxListeners } from 'node:events';
import type { Logger } from 'winston';
import { Registry } from 'prom-client';
import type { ChoriaSettings, ProvisionerConfig } from '../config/types.js';
import type { ChoriaClient } from '../choria/client.js';
import { RefusedIdentities, type NodeIdentity } from '../choria/identity.js';
import { ProvisionerMetrics } from '../metrics/metrics.js';
import type { NodeQuery, StatusQuery } from './queries.js';
import type { HostResult, HostRunner, Outcome } from '../host/types.js';
import type { HelperRunner } from '../host/helper/index.js';
import { PauseFlag } from '../util/pause.js';
import { silentLogger } from '../util/logger.js';
import { VERSION } from '../util/version.js';
import { singleFlight } from '../util/single-flight.js';
import { errorText } from '../util/values.js';
import type { LeaderElection } from './election/index.js';
import type { HistorySync, NodeHistory } from './history/index.js';
import { siteHistory } from './site-history.js';
import { ActiveList, type ActiveEntry, type DiscoverySource } from './active-list.js';
import { WorkPolicy } from './work-policy.js';
import { FleetShare } from './fleet-share.js';
import type { TakenHow } from './work-handover.js';
import { Admission, confirmByDiscovery } from './admission.js';
import { OutcomeRecorder, logOutcome } from './record-outcome.js';
import { runAttempt } from './attempt.js';
import { NodeClaims, claimedRunner } from './node-claims.js';
import { incarnationOf } from './coordination/membership.js';
import { discoverNodes } from './discovery.js';
import { RediscoveryAfterLapse, RediscoveryAfterReconnect } from './rediscovery.js';
import { startLeadership } from './leadership.js';
import {
  announceStartup,
  choriaAccountConnection,
  connectSite,
  type SiteConnectionOptions,
} from './site-connection.js';
import { listenToNodeLifecycle } from './lifecycle-events.js';
import { closeClient, stopParts } from './shutdown.js';
import { SiteGauges } from './site-gauges.js';
import { SiteReport, type ProvisionerStatus, type SiteReadiness } from './site-status.js';
import type { NodePage } from './node-listing.js';
import { helperFor, hostRunnerFor, type ProvisionerOptions } from './options.js';
import { QueueFullError, WorkQueue } from './work-queue.js';
import { SiteLease } from './lease.js';
import { leaseLapsedError } from '../util/cancelled.js';
import { SiteRenewals } from './renewal/site-renewals.js';
import { isRenewing } from './renewal/plan.js';

/** What Provisioner.retry() did. */
export type RetryAnswer = 'queued' | 'not-queued' | 'paused' | 'not-an-identity';

/** How many nodes a discovery offers in one turn of the event loop (see discover). */
const DISCOVERY_OFFER_BATCH = 50;

export class Provisioner {
  readonly config: ProvisionerConfig;
  readonly choria: ChoriaSettings;
  readonly logger: Logger;
  readonly metrics: ProvisionerMetrics;
  readonly pauseFlag: PauseFlag;
  readonly version: string;
  /** where this site's identities that fail the identity rule go: logged once each, counted */
  readonly refusals: RefusedIdentities;

  readonly #opts: ProvisionerOptions;
  readonly #list: ActiveList;
  readonly #queue: WorkQueue<ActiveEntry>;
  readonly #policy: WorkPolicy;
  readonly #share: FleetShare;
  readonly #history: NodeHistory;
  readonly #historySync: HistorySync;
  readonly #recorder: OutcomeRecorder;
  readonly #admission: Admission;
  readonly #lease: SiteLease;
  readonly #gauges: SiteGauges;
  readonly #report: SiteReport;
  readonly #stop = new AbortController();
  readonly #connection: SiteConnectionOptions;
  #client: ChoriaClient | undefined;
  #helper: HelperRunner | undefined;
  #runner: HostRunner | undefined;
  #election: LeaderElection | undefined;
  #unsubscribe: (() => void) | undefined;
  readonly #rediscovery = new RediscoveryAfterReconnect(() => this.discover());
  readonly #lapseRecovery = new RediscoveryAfterLapse(
    () => this.discover(),
    () => this.#mayAct(),
  );
  #renewals: SiteRenewals | undefined;
  #unwatchLink: (() => void) | undefined;
  #unwatchRefusals: (() => void) | undefined;
  #timers: NodeJS.Timeout[] = [];
  #workers: Promise<void>[] = [];
  /** attempts holding a worker */
  #busy = 0;
  /** attempts that gave their worker up to watch a node after a lost reply, until they end */
  readonly #watching = new Set<Promise<void>>();
  #state: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new';

  constructor(opts: ProvisionerOptions) {
    this.#opts = opts;
    this.config = opts.config;
    this.choria = opts.choria;
    this.version = opts.version ?? VERSION;
    this.logger = opts.logger ?? silentLogger();
    this.metrics = new ProvisionerMetrics(opts.registry ?? new Registry(), opts.config.site);
    this.refusals = new RefusedIdentities(this.logger);
    this.refusals.onRefused((source) => this.metrics.refusedIdentity(source));
    this.pauseFlag = new PauseFlag(false);
    this.pauseFlag.onChange((p) => this.metrics.setPaused(p));
    const capacity = opts.queueCapacity ?? 50_000;
    this.#queue = new WorkQueue(capacity);
    this.#list = new ActiveList({ holdMs: opts.holdMs ?? 60_000, lockRetryMs: opts.config.coordinationLockRetryMs });
    this.#policy = new WorkPolicy(capacity);
    this.#share = this.#fleetShare();
    this.#connection = {
      site: opts.config.site,
      choria: opts.choria,
      logger: this.logger,
      signal: this.#stop.signal,
      refusals: this.refusals,
    };
    const { history, sync } = siteHistory({
      ...opts,
      logger: this.logger,
      readOnly: opts.dryRun === true,
      retryMs: opts.historyRetryMs,
      refusals: this.refusals,
      choriaAccount: () => choriaAccountConnection(this.#connection),
    });
    this.#history = history;
    this.#admission = this.#siteAdmission();
    this.#historySync = sync;
    this.#lease = new SiteLease({
      history,
      logger: this.logger,
      ...(opts.config.leaderElection ? { election: () => this.#election } : {}),
      ...(opts.config.coordination === 'active_active' ? { membership: () => this.#policy.membership } : {}),
    });
    this.#recorder = this.#outcomeRecorder(history);
    const parts = {
      config: opts.config,
      identity: opts.choria.identity,
      version: this.version,
      dryRun: opts.dryRun === true,
      policy: this.#policy,
      list: this.#list,
      queue: this.#queue,
      history,
    };
    this.#gauges = new SiteGauges({
      ...parts,
      metrics: this.metrics,
      mode: opts.config.coordination,
      busyWorkers: () => this.#busy,
    });
    this.#report = new SiteReport({ ...parts, historySync: sync, recorder: this.#recorder }, () => ({
      lifecycle: this.#state,
      connected: this.#client !== undefined && !this.#client.isClosed,
      leader: this.#election?.isLeader,
      paused: this.paused,
      busyWorkers: this.#busy,
      watchingNodes: this.#watching.size,
    }));
    // every in-flight node listens for stop(): more than the default 10 is normal, not a leak
    setMaxListeners(0, this.#stop.signal);
  }

  /** How this instance's list follows the other provisioners of its site (fleet-share.ts). */
  #fleetShare(): FleetShare {
    return new FleetShare({
      list: this.#list,
      policy: this.#policy,
      logger: this.logger,
      running: () => this.#state === 'running',
      offer: (identity, source, reportedVersion) => this.offer(identity, source, reportedVersion),
      listChanged: () => this.#gauges.load(),
      membershipChanged: () => this.#gauges.coordination(),
      handedOver: (direction, n) => this.metrics.handedOver(this.choria.identity, direction, n),
    });
  }

  /** Where each attempt's outcome goes: metrics, history, and on success the end of a hand-over. */
  /** Admission of the identities heard of: known ones at once, others once they answered (admission.ts). */
  #siteAdmission(): Admission {
    return new Admission({
      knows: (identity) =>
        this.#list.get(identity) !== undefined ||
        this.#history.get(identity) !== undefined ||
        this.#policy.isForeign(identity),
      confirm: confirmByDiscovery(() => this.#client, this.#stop.signal),
      ...(this.config.identityCaseTwins ? {} : { caseTwin: (identity) => this.#history.caseTwin(identity) }),
      refuse: (identity, why, source) => this.refusals.refuse(identity, why, source),
      admit: (c) => this.#add(c.identity, c.source, c.reportedVersion, 'admitted'),
      ended: (how, n) => this.metrics.candidateEnded(how, n),
      size: (n) => this.metrics.setCandidates(n),
    });
  }

  #outcomeRecorder(history: NodeHistory): OutcomeRecorder {
    return new OutcomeRecorder({
      metrics: this.metrics,
      logger: this.logger,
      history,
      onSuccess: (identity) => {
        this.#policy.forgetHandover(identity);
        this.#policy.membership?.announceDone(identity);
      },
    });
  }

  get paused(): boolean {
    return this.pauseFlag.paused;
  }
  pause(): void {
    this.pauseFlag.pause();
  }
  resume(): void {
    this.pauseFlag.resume();
  }
  flip(): boolean {
    return this.pauseFlag.flip();
  }

  get client(): ChoriaClient | undefined {
    return this.#client;
  }

  get isLeader(): boolean | undefined {
    return this.#election?.isLeader;
  }

  /** Connects (retrying until stop()), then starts listening, working and discovering. */
  async start(): Promise<void> {
    if (this.#state !== 'new') throw new Error(`provisioner for site "${this.config.site}" was already started`);
    this.#state = 'starting';
    this.logger.info(
      `Starting choria-provisioner ${this.version} for site "${this.config.site}" with ${this.config.workers} ` +
        `workers${this.#opts.dryRun === true ? ' (dry run: nothing is sent that changes a node)' : ''}`,
    );
    if (this.config.leaderElection) this.pause();

    const helper = helperFor(this.#opts);
    this.#helper = helper;
    helper.warmUp?.((n) => this.logger.log(n.level, n.message));
    const client = this.#opts.client ?? (await connectSite(this.#connection));
    if (client === undefined) return; // stopped while connecting
    // stop() came while connecting: it could not close a client it did not know of yet
    if (this.#stopRequested) {
      if (this.#opts.client === undefined) await closeClient({ site: this.config.site, logger: this.logger }, client);
      return;
    }
    this.#client = client;
    // a client handed in refuses on its own: its refusals are counted as this site's too
    if (client.refusals !== this.refusals)
      this.#unwatchRefusals = client.refusals.onRefused((source) => this.metrics.refusedIdentity(source));
    this.#runner = this.#claimed(
      hostRunnerFor(this.#opts, { client, metrics: this.metrics, pause: this.pauseFlag, helper }),
    );

    await announceStartup(client, this.version, this.logger);

    // From here on stop() closes the client. Each await below is a point where stop() may have
    // run (or be running): nothing started after it would be stopped by anyone, and a timer
    // armed then keeps the process alive after stop() returned.
    if (this.#stopRequested) return;
    // The election (whose first campaign waits a random 0-5 s, as upstream) and the membership
    // start while the history loads: neither offers a node before this instance is running.
    if (this.config.leaderElection) this.#startElection(client);
    if (this.config.coordination === 'active_active') this.#joinGroup(client);
    this.#gauges.coordination();
    // before any node is offered: a restarted instance holds back what the site quarantined
    await this.#historySync.start(client.nats);
    if (this.#stopRequested) return;

    this.#unsubscribe = listenToNodeLifecycle(client, {
      config: this.config,
      metrics: this.metrics,
      logger: this.logger,
      history: this.#history,
      refusals: this.refusals,
      acceptsStartups: () => this.#acceptsStartups(),
      offer: (identity, _source, reportedVersion) => this.#heard(identity, 'event', reportedVersion) === true,
      leftProvisioning: (identity) => this.#share.leftProvisioning(identity),
    });
    for (let i = 0; i < this.config.workers; i++) this.#workers.push(this.#work(i));
    this.#timers.push(setInterval(() => void this.discover(), this.config.intervalMs));
    this.#unwatchLink = client.link.onRestored(() => this.#rediscovery.linkRestored(client.link.fleetReconnectMs));
    this.#timers.push(setInterval(() => this.#sweep(), 1_000));
    // active/active: an instance with nothing to do asks a busier member for queued nodes
    if (this.config.coordination === 'active_active' && this.config.coordinationHandover)
      this.#timers.push(setInterval(() => this.#share.mayBeIdle(), this.config.coordinationHeartbeatMs));
    this.#state = 'running';
    this.#gauges.load();
    this.#startRenewals();
    // active/active: the first discovery once the membership has settled (its share known). Not
    // during the settling: the replies of a large fleet, each offered as it arrives, would queue
    // ahead of the other members' heartbeats on the connection, and the instance would settle
    // before it has read who else is there. Discovery offers the first nodes within a round trip.
    const membership = this.#policy.membership;
    if (membership === undefined) void this.discover();
    else void membership.whenReady().then(() => this.discover());
  }

  /** Stops intake, aborts in-flight work, waits (bounded) for the workers and closes the connection. */
  async stop(): Promise<void> {
    if (this.#state === 'stopped' || this.#state === 'stopping') return;
    this.#state = 'stopping';
    this.logger.info(`Stopping provisioner for site "${this.config.site}"`);
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    this.#unsubscribe?.();
    this.#unwatchLink?.();
    this.#unwatchRefusals?.();
    this.#rediscovery.stop();
    this.#admission.stop();
    await this.#renewals?.stop();
    await stopParts({
      site: this.config.site,
      logger: this.logger,
      election: this.#election,
      membership: this.#policy.membership,
      abortWork: () => {
        const stopping = new Error('the provisioner is stopping');
        this.#stop.abort(stopping);
        this.#queue.close();
        this.#list.abortAttempts(stopping);
      },
      // read once the work is aborted: an attempt may have given its worker up until then
      workers: () => [...this.#workers, ...this.#watching],
      workersTimeoutMs: this.#opts.stopTimeoutMs ?? 10_000,
      runner: this.#runner,
      historySync: this.#historySync,
      helper: this.#helper,
      client: this.#opts.client === undefined ? this.#client : undefined,
    });
    this.refusals.flushLog();
    this.#recorder.logBudget.flush();
    this.#state = 'stopped';
    this.logger.info(`Stopped provisioner for site "${this.config.site}"`);
  }

  /** True once stop() was called: start() checks it after each of its awaits. */
  get #stopRequested(): boolean {
    return this.#state === 'stopping' || this.#state === 'stopped';
  }

  /**
   * Kills the helper processes synchronously. Only for a process about to die of an uncaught
   * error (stop() is the clean way): no child may outlive the provisioner.
   */
  killChildrenNow(): void {
    this.#helper?.killNow?.();
  }

  /**
   * Runs one broadcast discovery and offers every node found; skipped
   * while paused. A call during a discovery gets that one's count.
   */
  readonly discover: () => Promise<number> = singleFlight(async () => {
    const client = this.#client;
    if (client === undefined || this.#state !== 'running') return 0;
    if (this.paused) {
      this.logger.warn('Skipping discovery while paused');
      return 0;
    }
    let added = 0;
    const admitted: Promise<boolean>[] = [];
    const offer = (identity: NodeIdentity): void => {
      const heard = this.#heard(identity, 'discovery', undefined, true);
      if (heard === true) added++;
      else if (heard !== false) admitted.push(heard);
    };
    // The first nodes start while the discovery listens on for late answers, unless the policy
    // wants the whole list first to shuffle it. Offered in small batches once the replies at hand
    // have been read, not reply by reply: an offer costs far more than reading a reply, and what
    // comes on the connection meanwhile (a new member's heartbeat, to be answered before it
    // settles) should not wait for the offers of a whole fleet.
    const asFound = this.#policy.offersAsFound;
    const pending: NodeIdentity[] = [];
    let offering: NodeJS.Immediate | undefined;
    const offerBatch = (): void => {
      for (const identity of pending.splice(0, DISCOVERY_OFFER_BATCH)) offer(identity);
      offering = pending.length > 0 ? setImmediate(offerBatch) : undefined;
    };
    const onFound = (identity: NodeIdentity): void => {
      pending.push(identity);
      offering ??= setImmediate(offerBatch);
    };
    const found = await discoverNodes(
      client,
      this.metrics,
      this.logger,
      this.#stop.signal,
      asFound ? onFound : undefined,
    );
    // what is still waiting for its turn goes now
    clearImmediate(offering);
    for (const identity of pending.splice(0)) offer(identity);
    if (!asFound) for (const identity of this.#policy.order(found)) offer(identity);
    // the nodes not known before are added once they answered a directed discovery (admission.ts)
    for (const ok of await Promise.all(admitted)) if (ok) added++;
    this.logger.debug(`Discovery found ${found.length} nodes, ${added} new`);
    return added;
  });

  /**
   * Offers a node for provisioning; returns true when it was added to the list and queued.
   * `reportedVersion`: the go-choria version its startup event names, if any. An identity that
   * fails the identity rule (choria/identity.ts) is refused (logged and counted).
   */
  offer(identity: string, source: DiscoverySource, reportedVersion?: string): boolean {
    const id = this.refusals.admit(identity, 'control');
    return id !== undefined && this.#add(id, source, reportedVersion, 'offer');
  }

  /**
   * A node heard of (its startup event, a discovery answer): offered at once when the site knows
   * it, else once it answered a directed discovery; refused when it is a case twin (admission.ts).
   * With `wait`, a candidate's promise of whether it was added.
   */
  #heard(
    identity: NodeIdentity,
    source: 'event' | 'discovery',
    version: string | undefined,
    wait = false,
  ): boolean | Promise<boolean> {
    if (this.#state !== 'running') return false;
    const candidate = { identity, source, reportedVersion: version };
    const heard = wait ? this.#admission.heard(candidate, true) : this.#admission.heard(candidate);
    if (heard === 'known') return this.#add(identity, source, version, 'offer');
    return typeof heard === 'string' ? false : heard;
  }

  /**
   * offer(), the path of a node that just answered admission's directed discovery (queued ahead of
   * the others: whatever answered most recently is tried first, so a burst of forged servers that
   * answer and then go silent never stands between a real server that answered after them and a
   * worker), and that of a node an active/active hand-over moved here (not a new sighting).
   */
  #add(
    identity: NodeIdentity,
    source: DiscoverySource,
    reportedVersion: string | undefined,
    how: 'offer' | 'admitted' | TakenHow,
  ): boolean {
    if (this.#state !== 'running') return false;
    const now = Date.now();
    // a failing node waits out its back-off; a quarantined one waits for an operator or a reboot
    // and a node some instance just sent `restart` waits out its restart window (node-history.ts)
    const deferral = this.#history.deferral(identity, now, source);
    if (deferral !== undefined) return this.#notAdded(identity, source, deferral);
    // back in provisioning for its renewal: the hold after its last success is over
    const held = this.#list.get(identity);
    if (held?.state === 'held' && isRenewing(this.#history.get(identity))) this.#list.remove(held);
    // another member's node is kept for when its owner leaves (unless this instance is still busy with it)
    if (!this.#policy.mayWork(identity) && this.#list.get(identity) === undefined) {
      this.#policy.noteForeign(identity, source, now, reportedVersion);
      return this.#notAdded(identity, source, "another active/active member's");
    }
    const { result, entry } = this.#list.offer(
      identity,
      source,
      now,
      this.config.intervalMs,
      this.#history.get(identity)?.attempts ?? 0,
      reportedVersion,
    );
    if (result !== 'added') return this.#notAdded(identity, source, `${result}, ${entry.state}`);
    if (!this.#enqueue(entry, how === 'admitted')) return false;
    if (how === 'granted') {
      this.logger.info(`Adding ${identity} to the provision list after another active/active member handed it over`);
    } else if (how === 'taken-back') {
      this.logger.info(`Adding ${identity} to the provision list again: the member it was handed to did not confirm`);
    } else {
      if (source === 'discovery') this.metrics.discovered();
      else if (source === 'event') this.metrics.eventDiscovered();
      const after =
        source === 'discovery' ? 'discovering it' : source === 'event' ? 'receiving an event' : 'an operator asked';
      this.logger.info(`Adding ${identity} to the provision list after ${after}`);
    }
    this.#gauges.load();
    return true;
  }

  /** A node heard of that is not added, and why (at debug level: a discovery repeats it for every node). */
  #notAdded(identity: NodeIdentity, source: DiscoverySource, why: string): false {
    if (this.logger.isDebugEnabled()) this.logger.debug(`Not adding ${identity} from ${source}: ${why}`);
    return false;
  }

  /** Puts an entry in the work queue (`first`: ahead of the rest); when full (or closed) the entry leaves the list. */
  #enqueue(entry: ActiveEntry, first = false): boolean {
    try {
      if (first) this.#queue.pushFront(entry);
      else this.#queue.push(entry);
      return true;
    } catch (err) {
      this.#list.remove(entry);
      if (err instanceof QueueFullError) {
        this.metrics.queueFull();
        this.logger.warn(
          `Adding ${entry.identity} to the work queue failed with ${err.length} / ${err.capacity} entries`,
        );
      }
      this.#gauges.load();
      return false;
    }
  }

  /** Active/active: joins the site's group, as the process the node history names. */
  #joinGroup(client: ChoriaClient): void {
    this.#share.join(client, {
      config: this.config,
      identity: this.choria.identity,
      incarnation: incarnationOf(this.#history.process),
      version: this.version,
      report: () => ({ owned: this.#list.size, provisioned: this.#recorder.finished, queued: this.#queue.length }),
      idle: () =>
        this.#state === 'running' && !this.paused && this.#queue.length === 0 && this.#busy < this.config.workers,
      take: (identity, source, reportedVersion, how) => this.#add(identity, source, reportedVersion, how),
    });
  }

  /** Active/active: every attempt under a node claim of this process (node-claims.ts). */
  #claimed(runner: HostRunner): HostRunner {
    if (this.config.coordination !== 'active_active') return runner;
    const claims = new NodeClaims({ history: this.#history, liveMembers: () => this.#policy.membership?.members() });
    return claimedRunner(runner, claims, this.#lease);
  }

  async #work(worker: number): Promise<void> {
    for (let entry = await this.#queue.next(); entry !== undefined; entry = await this.#queue.next()) {
      this.#gauges.load();
      // Entries dropped by a leadership loss (or replaced) are skipped silently, like upstream.
      if (!this.#list.isCurrent(entry)) continue;
      if (!this.#policy.mayWork(entry.identity)) this.#share.handOver(entry);
      // paused, or this instance's right to act lapsed (a pause of the process, a lost lease): the
      // node is found again by whoever may work on it (this instance too, once it may act again)
      else if (this.paused) this.#drop(entry);
      else if (this.#lease.refusal() !== undefined) {
        this.#lapseRecovery.letGo();
        this.#drop(entry);
      } else await this.#provision(entry, worker);
    }
  }

  async #provision(entry: ActiveEntry, worker: number): Promise<void> {
    const runner = this.#runner;
    const abort = runner === undefined ? undefined : this.#list.startAttempt(entry, Date.now());
    if (runner === undefined || abort === undefined) return;
    const startedAt = entry.updatedAt;
    this.#busy++;
    this.#gauges.load();
    const logger = this.logger.child({ host: entry.identity, worker });
    const configuredAt = this.#history.get(entry.identity)?.configuredAt;
    const onStep = (step: string): void => this.#list.noteStep(entry, step, Date.now());
    // An attempt that lost the reply of a node-changing action watches the node for seconds
    // (discovery probes, host/lost-reply.ts) before it sends anything more, and one whose such
    // request is unanswered when the broker link comes back waits for a late reply first
    // (change-step.ts): it gives its worker to the next node from then on, so that a broker restart
    // that lost the replies of every attempt in flight does not hold the whole site up. Only
    // watching frees a worker: whatever the attempt sends after it (the action again, or the
    // restart after a configure) is one more request.
    let watching = false;
    let ended = false;
    let freeWorker = (): void => undefined;
    const workerFreed = new Promise<void>((resolve) => (freeWorker = resolve));
    const onWatching = (): void => {
      // once stopping, no worker takes another node: the attempt keeps its worker, which stop()
      // waits for (a watch that began later would not be in the list stop() waits on)
      if (watching || ended || this.#stopRequested) return;
      watching = true;
      this.#busy--;
      this.#gauges.load();
      freeWorker();
    };
    const attempt = runAttempt(runner, {
      entry,
      configuredAt,
      logger,
      abort,
      stop: this.#stop.signal,
      onStep,
      onWatching,
      lease: this.#lease,
    }).then((result) => {
      ended = true;
      if (!watching) this.#busy--;
      this.#finish(entry, result, logger, startedAt);
    });
    await Promise.race([attempt, workerFreed]);
    if (!watching) return;
    const watched: Promise<void> = attempt
      .catch((err: unknown) => {
        logger.error(`Recording the attempt on ${entry.identity} failed: ${errorText(err)}`);
      })
      .finally(() => this.#watching.delete(watched));
    this.#watching.add(watched);
  }

  /** An attempt ended: record it, settle the entry's next state, tell how it went. */
  #finish(entry: ActiveEntry, result: HostResult, logger: Logger, startedAt: number): void {
    const now = Date.now();
    this.#recorder.record(
      { identity: entry.identity, discoveredAt: entry.discoveredAt, startedAt, endedAt: now, result },
      logger,
    );
    if (result.outcome === 'cancelled' && !this.#stopRequested && this.#lease.refusal() !== undefined)
      this.#lapseRecovery.letGo();
    // another provisioner holds the lock of a node that is not ours (any more): the owner's
    const toOwner =
      result.outcome === 'skipped_locked' && this.#list.isCurrent(entry) && !this.#policy.mayWork(entry.identity);
    if (toOwner) this.#share.handOver(entry);
    const settled = toOwner ? undefined : this.#list.settle(entry, result.outcome, now, this.#policy.waitsOutLocks);
    logOutcome(
      logger,
      this.#recorder.logBudget,
      entry.identity,
      result,
      settled === 'locked' ? entry.waitEndsAt : undefined,
    );
    // its startup event came while the attempt ran, and could not add it then, or the attempt
    // found it back already (result.waitingAgain): the node is waiting in provisioning mode again
    // (an upgrade, a reboot), not until the next discovery
    if (settled === 'removed' && this.#acceptsStartups()) {
      if (entry.startedDuringAttempt) {
        logger.info(
          `${entry.identity} started again in provisioning mode while it was being provisioned: adding it again`,
        );
        this.offer(entry.identity, 'event', entry.reportedVersion);
      } else if (result.waitingAgain === true) {
        logger.info(`${entry.identity} is back in provisioning mode already: adding it again`);
        this.offer(entry.identity, 'discovery');
      }
    }
    this.#gauges.load();
    if (this.#queue.length === 0) this.#share.mayBeIdle();
  }

  /**
   * Whether a node's startup event may add it now: not while paused (an operator's pause holds the
   * site; the next discovery after resuming finds the node). Asked for events as they arrive, for
   * one that came during an attempt when that attempt ends, and for a node an attempt found back in
   * provisioning mode (HostResult.waitingAgain), which is as good as its startup event.
   */
  #acceptsStartups(): boolean {
    return !this.paused;
  }

  /**
   * Once a second: the waits that are over end, unseen foreign nodes and old history
   * records go, nodes let go while the right to act lapsed are looked for again.
   */
  #sweep(): void {
    const now = Date.now();
    this.metrics.setHistoryRecords(this.#history.size);
    const due = this.#list.takeDue(now);
    for (const e of due.lockWaitsOver) this.#retryLocked(e, now);
    // a node still waiting is seen again by every discovery; one not seen for two intervals left
    const forgotten = this.#policy.forgetUnseenSince(now - 2 * this.config.intervalMs);
    this.#policy.expireHandovers(now);
    this.#history.expire(now);
    if (this.#lapseRecovery.check())
      this.logger.info(
        'This instance may change nodes again after its right to act lapsed: discovering the nodes it let go',
      );
    this.#gauges.counts();
    if (due.released + due.lockWaitsOver.length + forgotten > 0) this.#gauges.load();
  }

  /** An owned node whose lock wait is over goes back into the queue; one no longer ours goes to its owner. */
  #retryLocked(entry: ActiveEntry, now: number): void {
    if (!this.#policy.mayWork(entry.identity)) return this.#share.handOver(entry);
    this.#list.requeue(entry, now);
    this.#enqueue(entry);
  }

  #drop(entry: ActiveEntry): void {
    this.#list.remove(entry);
    this.#gauges.load();
  }

  #startElection(client: ChoriaClient): void {
    this.#election = startLeadership({
      client,
      config: this.config,
      identity: this.choria.identity,
      metrics: this.metrics,
      logger: this.logger,
      pause: this.pauseFlag,
      splayMs: this.#opts.electionSplayMs,
      onWon: () => void this.discover(),
      // the new leader starts over: every node known here is forgotten, in-flight work aborted
      onLost: () => {
        this.#list.clear(leaseLapsedError('the attempt', 'leadership was lost'));
        this.#queue.clear();
        this.#gauges.load();
      },
    });
  }

  /**
   * Ends a node's quarantine (and back-off); true when it was quarantined. It is tried with the
   * next discovery or event. An identity that fails the identity rule is refused (false).
   */
  release(identity: string): boolean {
    if (this.refusals.admit(identity, 'control') === undefined) return false;
    const was = this.#history.release(identity, Date.now());
    if (was) this.logger.info(`Released ${identity} from quarantine on request`);
    this.#gauges.counts();
    return was;
  }

  /**
   * Ends a node's quarantine and back-off and queues it now. Says why not otherwise: the identity
   * fails the identity rule, the site is paused (a paused site queues nothing), or the node is on
   * the list already (or the queue is full).
   */
  retry(identity: string): RetryAnswer {
    const id = this.refusals.admit(identity, 'control');
    if (id === undefined) return 'not-an-identity';
    if (this.paused) return 'paused';
    this.#history.release(id, Date.now());
    return this.#add(id, 'operator', undefined, 'offer') ? 'queued' : 'not-queued';
  }

  /** /readyz for this site (site-status.ts says when a site is ready). */
  readiness(): SiteReadiness {
    return this.#report.readiness();
  }

  /** How many attempts of this instance ended with each outcome since it started. */
  outcomes(): Record<Outcome, number> {
    return this.#recorder.outcomeCounts();
  }

  /** One page of this site's nodes, filtered by state and identity, sorted (ties by identity). */
  nodes(query: Omit<NodeQuery, 'site'>): NodePage {
    return this.#report.nodes(query, Date.now());
  }

  /** A snapshot for the /status endpoint and `choria-provisioner status`. */
  status(opts: StatusQuery = {}): ProvisionerStatus {
    const limit = opts.limit ?? 1000;
    const status = this.#report.status(limit, Date.now());
    return this.#renewals === undefined ? status : { ...status, renewals: this.#renewals.view(limit) };
  }

  /** Not paused, and this instance's right to act holds. */
  #mayAct(): boolean {
    return !this.paused && this.#lease.refusal() === undefined;
  }

  /** Renewals that stopped after failures go on, and the failed ones are due again; false without renewals. */
  resumeRenewals(): boolean {
    if (this.#renewals === undefined) return false;
    this.#renewals.renewer.resume();
    return true;
  }

  /**
   * Credential renewals (renewal_choria_config): this instance sends `reprovision` to a node only
   * while it may provision that node itself: running, not paused, its right to act holding, and the
   * node its own by the site's coordination.
   */
  #startRenewals(): void {
    const settings = this.config.renewal;
    if (settings === undefined) return;
    this.#renewals = new SiteRenewals({
      settings,
      token: this.config.token,
      insecure: this.config.choriaInsecure,
      history: this.#history,
      siteRecord: (name) => this.#historySync.siteRecord(name),
      metrics: this.metrics,
      logger: this.logger,
      dryRun: this.#opts.dryRun === true,
      signal: this.#stop.signal,
      ...(this.#opts.renewalClient !== undefined ? { client: this.#opts.renewalClient } : {}),
      mayRenew: (identity) => this.#state === 'running' && this.#mayAct() && this.#policy.mayWork(identity),
    });
    void this.#renewals.start();
  }
}

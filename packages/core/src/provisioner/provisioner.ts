// The Provisioner: one site's scheduler. It owns its connection, host list, bounded work queue,
// workers, discovery loop, lifecycle listener, hold sweeper and election; nothing is module state, so
// several sites run in one process.
import { setMaxListeners } from 'node:events';
import type { Logger } from 'winston';
import { Registry } from 'prom-client';
import type { ChoriaSettings, ProvisionerConfig } from '../config/types.js';
import { ChoriaClient } from '../choria/client.js';
import type { LifecycleEvent } from '../choria/lifecycle.js';
import { ProvisionerMetrics } from '../metrics/metrics.js';
import { outcomeMeaning, type HostResult, type HostRunner } from '../host/types.js';
import { PauseFlag } from '../util/pause.js';
import { silentLogger } from '../util/logger.js';
import { helperRunnerFor, type HelperFunction, type HelperRunner } from '../host/helper/index.js';
import { createHostRunner } from '../host/host.js';
import { LeaderElection } from './election/index.js';
import { ForeignNodes, Membership, type MembershipView } from './coordination/index.js';
import { HistorySync, NodeHistory, type HistoryConnection, type HistoryStatus } from './history/index.js';
import { connectChoria } from '../choria/connector.js';
import { PROVISIONER_NATS_USER } from '../config/choria-config.js';
import type { EffectiveCoordination } from '../metrics/metrics.js';
import type { CoordinationMode } from '../config/types.js';
import { HostList, type DiscoverySource, type HostEntry } from './host-list.js';
import { RecentThroughput, type ThroughputSeries } from './throughput.js';
import type { NodeQuery, StatusQuery } from '../metrics/http.js';
import { describeNode, pageOf, type HostStatus, type KnownNode, type NodePage } from './node-listing.js';

export type { HostStatus, NodePage } from './node-listing.js';
import { QueueClosedError, QueueFullError, WorkQueue } from './work-queue.js';
import { VERSION } from '../util/version.js';
import { errorText } from '../util/values.js';
import { settledWithin } from '../util/deadline.js';
import { formatMs } from '../util/duration.js';

/** How long stop() waits for each of its steps after the workers (the helper pool's own grace and kill wait fit in it). */
const STOP_STEP_MS = 5_000;
/** How long stop() lets the last node history writes land. */
const HISTORY_SETTLE_MS = 2_000;

export interface ProvisionerOptions {
  readonly config: ProvisionerConfig;
  /** Choria client settings after the provisioner overrides (applyProvisionerOverrides) */
  readonly choria: ChoriaSettings;
  readonly logger?: Logger;
  /** shared prom-client registry; a private one when absent */
  readonly registry?: Registry;
  /** an in-process helper function or a ready HelperRunner instead of the config's helper command */
  readonly helper?: HelperFunction | HelperRunner;
  /** post-success hold, default 60 s (upstream) */
  readonly holdMs?: number;
  /** work queue capacity, default 50,000 (upstream) */
  readonly queueCapacity?: number;
  /** replaces the Host pipeline (tests, custom flows) */
  readonly hostRunner?: HostRunner;
  /** an already connected client (embedding, tests); not closed by stop() */
  readonly client?: ChoriaClient;
  /** maximum random wait before the first election campaign, default 5 s (upstream) */
  readonly electionSplayMs?: number;
  /** `run --dry-run`: fetch, check and run the helper for every node, change none (HostDeps.dryRun) */
  readonly dryRun?: boolean;
  /** how often an unreachable history bucket (history_store kv) is tried again, default 60 s */
  readonly historyRetryMs?: number;
  /** how long stop() waits for in-flight work, default 10 s */
  readonly stopTimeoutMs?: number;
  readonly version?: string;
}

export interface ProvisionerStatus {
  site: string;
  identity: string;
  version: string;
  connected: boolean;
  leaderElection: boolean;
  leader?: boolean;
  paused: boolean;
  /** `run --dry-run`: nothing that changes a node is sent */
  dryRun: boolean;
  coordination: CoordinationStatus;
  history: HistoryStatus;
  queue: number;
  queueCapacity: number;
  busyWorkers: number;
  workers: number;
  hostCounts: Record<string, number>;
  hosts: HostStatus[];
  hostsTruncated: boolean;
  /** nodes this instance finished (provisioned, shut down, upgraded) and failed attempts, per slot over the last 10 minutes */
  recent: ThroughputSeries;
}

/** How this instance shares the fleet with the other instances of its site. */
export interface CoordinationStatus {
  /** the configured mode */
  mode: CoordinationMode;
  /** what it runs as: lock_only when active_active could not form a membership */
  effective: EffectiveCoordination;
  /** the Choria identity the other instances and the node lock know this instance by */
  instance: string;
  /** active_active: the group, its state and the live members with what each reports */
  membership?: MembershipView;
  /** active_active: nodes seen that another member owns */
  foreignNodes?: number;
}

/** One site's answer to /readyz. */
export interface SiteReadiness {
  site: string;
  ready: boolean;
  reason: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** Fisher-Yates, in place: lock-only instances that try nodes in the same order would collide on every one. */
function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j] as T, items[i] as T];
  }
  return items;
}

function isHelperRunner(h: HelperFunction | HelperRunner): h is HelperRunner {
  return typeof h === 'object' && h !== null && 'run' in h && 'close' in h;
}

export class Provisioner {
  readonly config: ProvisionerConfig;
  readonly choria: ChoriaSettings;
  readonly logger: Logger;
  readonly metrics: ProvisionerMetrics;
  readonly pauseFlag: PauseFlag;
  readonly version: string;

  readonly #opts: ProvisionerOptions;
  readonly #hosts = new HostList();
  readonly #queue: WorkQueue<HostEntry>;
  readonly #holdMs: number;
  readonly #held: HostEntry[] = [];
  /** active_active: owned nodes whose lock another provisioner held, in retry order */
  readonly #lockWait: HostEntry[] = [];
  readonly #foreign: ForeignNodes;
  readonly #history: NodeHistory;
  readonly #historySync: HistorySync;
  #membership: Membership | undefined;
  #finished = 0;
  readonly #throughput = new RecentThroughput();
  readonly #stop = new AbortController();
  #client: ChoriaClient | undefined;
  #helper: HelperRunner | undefined;
  #runner: HostRunner | undefined;
  #election: LeaderElection | undefined;
  #unsubscribe: (() => void) | undefined;
  #timers: NodeJS.Timeout[] = [];
  #workers: Promise<void>[] = [];
  #busy = 0;
  #discovering: Promise<number> | undefined;
  #state: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' = 'new';

  constructor(opts: ProvisionerOptions) {
    this.#opts = opts;
    this.config = opts.config;
    this.choria = opts.choria;
    this.version = opts.version ?? VERSION;
    this.logger = opts.logger ?? silentLogger();
    this.metrics = new ProvisionerMetrics(opts.registry ?? new Registry(), opts.config.site);
    this.pauseFlag = new PauseFlag(false);
    this.pauseFlag.onChange((p) => this.metrics.setPaused(p));
    this.#queue = new WorkQueue(opts.queueCapacity ?? 50_000);
    this.#holdMs = opts.holdMs ?? 60_000;
    this.#foreign = new ForeignNodes(opts.queueCapacity ?? 50_000);
    this.#history = new NodeHistory({
      policy: { backoffMs: opts.config.retryBackoffMs, backoffMaxMs: opts.config.retryBackoffMaxMs, quarantineAfter: opts.config.quarantineAfter },
      instance: opts.choria.identity,
      ttlMs: opts.config.historyTtlMs,
      onWriteError: (err) => this.logger.warn(`Could not write the node history to bucket ${opts.config.historyBucket}, keeping changes until it can: ${errorText(err)}`),
      onWritten: () => this.logger.info(`Writing the node history to bucket ${opts.config.historyBucket} again`),
    });
    this.#historySync = new HistorySync({
      history: this.#history,
      config: opts.config,
      logger: this.logger,
      readOnly: opts.dryRun === true,
      ...(opts.historyRetryMs !== undefined ? { retryMs: opts.historyRetryMs } : {}),
      ...(opts.choria.natsUser === PROVISIONER_NATS_USER ? { secondary: this.#choriaAccountConnection() } : {}),
    });
    // every in-flight node listens for stop(): more than the default 10 is normal, not a leak
    setMaxListeners(0, this.#stop.signal);
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
    this.logger.info(`Starting choria-provisioner ${this.version} for site "${this.config.site}" with ${this.config.workers} workers${this.#opts.dryRun === true ? ' (dry run: nothing is sent that changes a node)' : ''}`);
    if (this.config.leaderElection) this.pause();

    this.#helper = this.#makeHelper();
    this.#helper.warmUp?.();
    const client = this.#opts.client ?? (await this.#connect());
    if (client === undefined) return; // stopped while connecting
    // stop() came while connecting: it could not close a client it did not know of yet
    if (this.#stopRequested) {
      if (this.#opts.client === undefined) await this.#closeClient(client);
      return;
    }
    this.#client = client;
    this.#runner =
      this.#opts.hostRunner ??
      createHostRunner({ config: this.config, client, helper: this.#helper, metrics: this.metrics, pause: this.pauseFlag, ...(this.#opts.dryRun === true ? { dryRun: true } : {}) });

    try {
      await client.publishStartupEvent({ component: 'provisioner', version: this.version });
    } catch (err) {
      this.logger.warn(`Could not publish the provisioner startup event: ${errorText(err)}`);
    }

    // From here on stop() closes the client. Each await below is a point where stop() may have
    // run (or be running): nothing started after it would be stopped by anyone, and a timer
    // armed then keeps the process alive after stop() returned.
    if (this.#stopRequested) return;
    // The election (whose first campaign waits a random 0-5 s, as upstream) and the membership
    // start while the history loads: neither offers a node before this instance is running.
    if (this.config.leaderElection) this.#startElection(client);
    if (this.config.coordination === 'active_active') this.#startMembership(client);
    this.#reportCoordination();
    // before any node is offered: a restarted instance holds back what the site quarantined
    await this.#historySync.start(client.nats);
    if (this.#stopRequested) return;

    const onInvalid = (err: Error): void => {
      this.metrics.eventError();
      this.logger.debug(`Ignoring an invalid lifecycle event: ${err.message}`);
    };
    // a provisioning-mode server announces a restart or shutdown before it goes
    const subs = (['startup', 'shutdown'] as const).map((type) => client.subscribeLifecycle(type, this.config.lifecycleComponent, (ev) => this.#onEvent(ev), { onInvalid }));
    this.#unsubscribe = () => {
      for (const sub of subs) sub.unsubscribe();
    };

    for (let i = 0; i < this.config.workers; i++) this.#workers.push(this.#work(i));
    this.#timers.push(setInterval(() => void this.discover(), this.config.intervalMs));
    this.#timers.push(setInterval(() => this.#sweepHeld(), 1_000));
    this.#state = 'running';
    this.#updateGauges();
    // active/active: while the members are still getting to know each other, what the first
    // discovery finds waits in the foreign list; the membership's first change takes this
    // instance's share from there (so discovery and the settling heartbeat overlap)
    void this.discover();
  }

  /** Stops intake, aborts in-flight work, waits (bounded) for the workers and closes the connection. */
  async stop(): Promise<void> {
    if (this.#state === 'stopped' || this.#state === 'stopping') return;
    this.#state = 'stopping';
    this.logger.info(`Stopping provisioner for site "${this.config.site}"`);
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    this.#unsubscribe?.();
    // Every step below is bounded: a stop must end even when the broker does not answer (the
    // election's and the membership's last messages wait for it) or a helper does not exit.
    await this.#bounded('the leader election', this.#election?.stop());
    // leave first: the others take over this instance's queued share at once
    await this.#bounded('leaving the coordination group', this.#membership?.stop());
    this.#stop.abort(new Error('the provisioner is stopping'));
    this.#queue.close();
    for (const e of this.#hosts.active()) e.abort?.abort(new Error('the provisioner is stopping'));
    const timeout = this.#opts.stopTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(this.#workers),
      new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          this.logger.warn(`Workers did not finish within ${timeout} ms, closing anyway`);
          resolve();
        }, timeout);
      }),
    ]);
    clearTimeout(timer);
    // after the workers: an attempt finishing its restart may still look for the node's events
    this.#runner?.close?.();
    // the last attempts' records, so the next process (or another instance) knows them
    await this.#bounded('writing the node history', this.#historySync.stop(HISTORY_SETTLE_MS), HISTORY_SETTLE_MS + STOP_STEP_MS);
    const helper = this.#helper;
    if (helper !== undefined && !(await this.#bounded('closing the helper', helper.close()))) helper.killNow?.();
    const client = this.#client;
    if (this.#opts.client === undefined && client !== undefined) await this.#closeClient(client);
    this.#state = 'stopped';
    this.logger.info(`Stopped provisioner for site "${this.config.site}"`);
  }

  /** True once stop() was called: start() checks it after each of its awaits. */
  get #stopRequested(): boolean {
    return this.#state === 'stopping' || this.#state === 'stopped';
  }

  /** Waits for one step of stop() at most `ms`; false (after a warning naming it) when it did not finish. */
  async #bounded(what: string, step: Promise<unknown> | undefined, ms = STOP_STEP_MS): Promise<boolean> {
    if (step === undefined) return true;
    if (await settledWithin(step, ms)) return true;
    this.logger.warn(`Stopping provisioner for site "${this.config.site}": ${what} did not finish within ${formatMs(ms)}, going on without it`);
    return false;
  }

  async #closeClient(client: ChoriaClient): Promise<void> {
    await this.#bounded('closing the broker connection', client.close());
  }

  /**
   * Kills the helper processes synchronously. Only for a process about to die of an uncaught
   * error (stop() is the clean way): no child may outlive the provisioner.
   */
  killChildrenNow(): void {
    this.#helper?.killNow?.();
  }

  /** Runs one broadcast discovery and offers every node found; skipped while paused. */
  async discover(): Promise<number> {
    if (this.#discovering !== undefined) return await this.#discovering;
    this.#discovering = this.#discoverOnce().finally(() => {
      this.#discovering = undefined;
    });
    return await this.#discovering;
  }

  async #discoverOnce(): Promise<number> {
    const client = this.#client;
    if (client === undefined || this.#state !== 'running') return 0;
    if (this.paused) {
      this.logger.warn('Skipping discovery while paused');
      return 0;
    }
    this.metrics.discoverCycle();
    let found: string[];
    try {
      found = await client.discover({ agent: 'choria_provision', signal: this.#stop.signal });
    } catch (err) {
      if (this.#stop.signal.aborted) return 0;
      this.metrics.discoveryError();
      this.logger.error(`Discovery failed: ${errorText(err)}`);
      return 0;
    }
    if (this.#membership?.state === 'unavailable') shuffle(found);
    let added = 0;
    for (const identity of found) if (this.offer(identity, 'discovery')) added++;
    this.logger.debug(`Discovery found ${found.length} nodes, ${added} new`);
    return added;
  }

  /**
   * Offers a node for provisioning; returns true when it was added to the list and queued.
   * `reportedVersion`: the go-choria version its startup event names, if any.
   */
  offer(identity: string, source: DiscoverySource, reportedVersion?: string): boolean {
    if (this.#state !== 'running') return false;
    const now = Date.now();
    // a failing node waits out its back-off; a quarantined one waits for an operator or a reboot
    if (this.#history.holdsBack(identity, now) !== undefined) return false;
    const membership = this.#membership;
    if (membership !== undefined && !membership.owns(identity) && this.#hosts.get(identity) === undefined) {
      this.#foreign.note(identity, source, now, reportedVersion);
      return false;
    }
    const { result, entry } = this.#hosts.offer(identity, source, now, this.config.intervalMs, this.#history.get(identity)?.attempts ?? 0, reportedVersion);
    if (result !== 'added') return false;
    try {
      this.#queue.push(entry);
    } catch (err) {
      this.#hosts.remove(entry);
      if (err instanceof QueueFullError) {
        this.metrics.queueFull();
        this.logger.warn(`Adding ${identity} to the work queue failed with ${err.length} / ${err.capacity} entries`);
      }
      this.#updateGauges();
      return false;
    }
    if (source === 'discovery') this.metrics.discovered();
    else if (source === 'event') this.metrics.eventDiscovered();
    this.logger.info(`Adding ${identity} to the provision list after ${source === 'discovery' ? 'discovering it' : source === 'event' ? 'receiving an event' : 'an operator asked'}`);
    this.#updateGauges();
    return true;
  }

  #onEvent(ev: LifecycleEvent): void {
    if (ev.type === 'shutdown') return this.#leftProvisioning(ev.identity);
    if (ev.type !== 'startup') return;
    // the node booted again: whatever made it fail may be gone, and what it was configured with before is no longer a given
    const released = this.#history.release(ev.identity, Date.now(), { rebooted: true, keepQuarantine: !this.config.quarantineReleaseOnStartup });
    if (released) this.logger.info(`Releasing ${ev.identity} from quarantine: it started again`);
    if (this.paused) {
      this.logger.debug(`Ignoring the startup event of ${ev.identity} while paused`);
      return;
    }
    this.offer(ev.identity, 'event', ev.version === '' ? undefined : ev.version);
  }

  async #work(n: number): Promise<void> {
    for (;;) {
      let entry: HostEntry;
      try {
        entry = await this.#queue.pop();
      } catch (err) {
        if (err instanceof QueueClosedError) return;
        throw err;
      }
      this.#updateGauges();
      // Entries dropped by a leadership loss (or replaced) are skipped silently, like upstream.
      if (!this.#hosts.isCurrent(entry)) continue;
      if (this.#membership !== undefined && !this.#membership.owns(entry.identity)) {
        this.#handOver(entry);
        continue;
      }
      if (this.paused) {
        this.#hosts.remove(entry);
        this.#updateGauges();
        continue;
      }
      await this.#provision(entry, n);
    }
  }

  async #provision(entry: HostEntry, worker: number): Promise<void> {
    const runner = this.#runner;
    if (runner === undefined) return;
    entry.state = 'provisioning';
    entry.attempts++;
    entry.updatedAt = Date.now();
    const startedAt = entry.updatedAt;
    const abort = new AbortController();
    entry.abort = abort;
    const onStop = (): void => abort.abort(this.#stop.signal.reason);
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    this.#busy++;
    this.#updateGauges();
    const logger = this.logger.child({ host: entry.identity, worker });
    let result: HostResult;
    try {
      const configuredAt = this.#history.get(entry.identity)?.configuredAt;
      result = await runner({
        identity: entry.identity,
        discoveredAt: entry.discoveredAt,
        ...(configuredAt !== undefined ? { configuredAt } : {}),
        ...(entry.reportedVersion !== undefined ? { reportedVersion: entry.reportedVersion } : {}),
        signal: abort.signal,
        logger,
        onStep: (step) => {
          entry.step = step;
          entry.updatedAt = Date.now();
        },
      });
    } catch (err) {
      // a custom runner that throws once its attempt was cancelled: a cancellation, not a failure
      const outcome = abort.signal.aborted ? 'cancelled' : 'failed';
      result = { outcome, message: errorText(err), error: err instanceof Error ? err : new Error(String(err)) };
    } finally {
      this.#stop.signal.removeEventListener('abort', onStop);
      entry.abort = undefined;
      this.#busy--;
    }
    this.#finish(entry, result, logger, startedAt);
  }

  #finish(entry: HostEntry, result: HostResult, logger: Logger, startedAt: number): void {
    const now = Date.now();
    const meaning = outcomeMeaning(result.outcome);
    this.metrics.attemptEnded(result.outcome);
    const record = this.#history.attempted(entry.identity, {
      outcome: result.outcome,
      message: result.message,
      at: now,
      durationMs: now - startedAt,
      configured: result.configured === true,
      discoveredAt: entry.discoveredAt,
    });
    if (record.quarantinedAt === now) logger.warn(`Quarantined ${entry.identity} after ${record.failures} failed attempts in a row: release it with the API or restart it`);
    else if (meaning === 'failure' && record.notBefore !== undefined) logger.info(`Not trying ${entry.identity} again before ${iso(record.notBefore)} (failure ${record.failures} in a row)`);
    entry.step = undefined;
    entry.updatedAt = now;
    const current = this.#hosts.isCurrent(entry);
    this.#throughput.note(meaning, now);
    if (meaning === 'success') {
      this.#finished++;
      this.#membership?.announceDone(entry.identity);
    }
    const membership = this.#membership;
    if (current && result.outcome === 'skipped_locked' && membership?.state === 'formed') {
      // Another instance holds the lock: the owner we both agree on is busy with it, or one
      // that left the group did not finish it. Ours: wait out the lock; not ours: the owner's.
      if (membership.owns(entry.identity)) {
        entry.state = 'locked';
        entry.heldUntil = now + this.config.coordinationLockRetryMs;
        this.#lockWait.push(entry);
      } else {
        this.#handOver(entry);
      }
    } else if (current && (result.outcome === 'provisioned' || result.outcome === 'shutdown')) {
      // Held so a discovery during the node's restart does not grab it again.
      entry.state = 'held';
      entry.heldUntil = now + this.#holdMs;
      this.#held.push(entry);
    } else if (current) {
      this.#hosts.remove(entry);
    }
    switch (result.outcome) {
      case 'provisioned':
        logger.info(`Provisioned ${entry.identity}`);
        break;
      case 'shutdown':
        logger.info(`Shut down ${entry.identity} on request of the helper${result.message ? `: ${result.message}` : ''}`);
        break;
      case 'upgraded':
        logger.info(`Upgraded ${entry.identity}, it will be provisioned when it comes back`);
        break;
      case 'gone':
        logger.warn(`Dropped ${entry.identity} for now: ${result.message ?? 'it stopped answering'}`);
        break;
      case 'dry_run':
        logger.info(`${entry.identity}: ${result.message ?? 'dry run'}`);
        break;
      case 'cancelled':
        logger.info(`Stopped provisioning ${entry.identity} for now (not a failure): ${result.message ?? 'cancelled'}`);
        break;
      case 'skipped_locked':
        if (entry.state === 'locked') logger.info(`Waiting for the provisioning lock of ${entry.identity}: another provisioner holds it; trying again at ${iso(entry.heldUntil ?? now)}`);
        else logger.info(`Skipping ${entry.identity}: another provisioner holds its provisioning lock`);
        break;
      default:
        logger.error(`Could not provision ${entry.identity}: ${result.message ?? result.outcome}`);
    }
    this.#updateGauges();
  }

  #sweepHeld(): void {
    const now = Date.now();
    let changed = this.#retryLocked(now);
    // a node still waiting is seen again by every discovery; one not seen for two intervals left
    if (this.#foreign.forgetOlderThan(now - 2 * this.config.intervalMs) > 0) changed = true;
    this.#history.expire(now);
    this.#reportCounts();
    for (const e of this.#due(this.#held, 'held', now)) {
      this.#hosts.remove(e);
      changed = true;
    }
    if (changed) this.#updateGauges();
  }

  /**
   * Takes the entries whose wait (`heldUntil`) is over off the front of `list` (kept in due order)
   * and returns those still current and still in `state`; the others were replaced or moved on.
   */
  #due(list: HostEntry[], state: 'held' | 'locked', now: number): HostEntry[] {
    const due: HostEntry[] = [];
    while (list.length > 0) {
      const e = list[0] as HostEntry;
      if ((e.heldUntil ?? 0) > now) break;
      list.shift();
      if (this.#hosts.isCurrent(e) && e.state === state) due.push(e);
    }
    return due;
  }

  /** Owned nodes whose lock wait is over go back into the queue; others go to their owner. */
  #retryLocked(now: number): boolean {
    let changed = false;
    for (const e of this.#due(this.#lockWait, 'locked', now)) {
      changed = true;
      if (this.#membership !== undefined && !this.#membership.owns(e.identity)) {
        this.#handOver(e);
        continue;
      }
      e.state = 'queued';
      e.heldUntil = undefined;
      e.updatedAt = now;
      try {
        this.#queue.push(e);
      } catch {
        this.#hosts.remove(e);
      }
    }
    return changed;
  }

  /** A node another member owns leaves this instance's list (not in flight: the lock covers those). */
  #handOver(entry: HostEntry): void {
    this.#hosts.remove(entry);
    this.#foreign.note(entry.identity, entry.source, Date.now(), entry.reportedVersion);
    this.#updateGauges();
  }

  /** The member list changed: take what is now ours from the foreign list, hand over what is not. */
  #rebalance(): void {
    const membership = this.#membership;
    if (membership === undefined || !membership.ready || this.#state !== 'running') return this.#reportCoordination();
    for (const e of [...this.#hosts.active()]) {
      if ((e.state === 'queued' || e.state === 'locked') && !membership.owns(e.identity)) this.#handOver(e);
    }
    const mine = this.#foreign.takeWhere((identity) => membership.owns(identity));
    for (const n of mine) this.offer(n.identity, n.source, n.reportedVersion);
    if (mine.length > 0) this.logger.info(`Took over ${mine.length} nodes after the active/active membership changed`);
    this.#reportCoordination();
  }

  /** Another member finished these: forget them here unless one is in flight. */
  #othersFinished(nodes: readonly string[]): void {
    let changed = false;
    for (const identity of nodes) if (this.#forget(identity)) changed = true;
    if (changed) this.#updateGauges();
  }

  /**
   * The node announced that it restarts or shuts down: whoever provisioned it (another instance,
   * a Go provisioner) is done with it, so a queued entry or a lock wait would only time out.
   * In-flight and held entries are this instance's own work and stay.
   */
  #leftProvisioning(identity: string): void {
    if (this.#forget(identity)) {
      this.logger.debug(`Dropping ${identity} from the provision list: it announced a restart or shutdown`);
      this.#updateGauges();
    }
  }

  #forget(identity: string): boolean {
    let forgot = this.#foreign.delete(identity);
    const e = this.#hosts.get(identity);
    if (e !== undefined && (e.state === 'queued' || e.state === 'locked')) {
      this.#hosts.remove(e);
      forgot = true;
    }
    return forgot;
  }

  #startMembership(client: ChoriaClient): void {
    this.#membership = new Membership({
      nc: client.nats,
      group: this.config.coordinationGroup,
      instance: this.choria.identity,
      heartbeatMs: this.config.coordinationHeartbeatMs,
      logger: this.logger,
      version: this.version,
      report: () => ({ owned: this.#hosts.size, provisioned: this.#finished }),
      onChange: () => this.#rebalance(),
      onDone: (nodes) => this.#othersFinished(nodes),
      onInvalid: (reason) => this.logger.debug(`Ignoring an invalid active/active message: ${reason}`),
    });
    this.#membership.start();
  }

  #effectiveCoordination(): EffectiveCoordination {
    if (this.config.coordination === 'active_active' && this.#membership?.state === 'unavailable') return 'lock_only';
    return this.config.coordination;
  }

  #reportCoordination(): void {
    this.metrics.setCoordinationMode(this.choria.identity, this.#effectiveCoordination());
    this.#reportCounts();
  }

  /** Leadership lost: forget every host and queued entry; in-flight work is aborted. */
  #dropAll(): void {
    const dropped = this.#hosts.clear();
    this.#queue.clear();
    this.#held.length = 0;
    this.#lockWait.length = 0;
    for (const e of dropped) e.abort?.abort(new Error('leadership was lost'));
    this.#updateGauges();
  }

  #startElection(client: ChoriaClient): void {
    const identity = this.choria.identity;
    const key = this.config.leaderElectionKey;
    this.#election = new LeaderElection({
      nc: client.nats,
      identity,
      key,
      bucket: this.config.leaderElectionBucket,
      apiPrefix: this.config.streamsApiPrefix,
      logger: this.logger,
      ...(this.#opts.electionSplayMs !== undefined ? { splayMs: this.#opts.electionSplayMs } : {}),
      onWon: () => {
        this.metrics.setElectionLeader(key, identity, true);
        this.logger.warn('Became leader after winning election');
        this.resume();
        void this.discover();
      },
      onLost: () => {
        this.metrics.setElectionLeader(key, identity, false);
        this.logger.warn('Lost leadership');
        this.pause();
        this.#dropAll();
      },
      onCampaign: (state) => this.metrics.electionCampaign(key, identity, state),
      onIntervalChange: (s) => this.metrics.setElectionInterval(key, identity, s),
    });
    this.metrics.setElectionLeader(key, identity, false);
    this.#election.start();
  }

  #makeHelper(): HelperRunner {
    const h = this.#opts.helper;
    return h !== undefined && isHelperRunner(h) ? h : helperRunnerFor(this.config, h);
  }

  /**
   * The provisioner logs in as the `provisioner` user, which a Choria Broker puts in its
   * provisioning account (no JetStream there); the same settings without that login reach the
   * choria account, where the node history can live (history-sync.ts).
   */
  #choriaAccountConnection(): HistoryConnection {
    const settings = { ...this.choria, natsUser: undefined, natsPassword: undefined };
    return {
      kind: 'choria',
      connect: () => connectChoria(settings, { logger: this.logger, name: `choria-provisioner ${this.config.site} history`.trim(), maxConnectAttempts: 3, signal: this.#stop.signal }),
    };
  }

  /** The client retries an unreachable broker by itself (logging each try) until stop() aborts it. */
  async #connect(): Promise<ChoriaClient | undefined> {
    try {
      return await ChoriaClient.connect(this.choria, {
        logger: this.logger,
        name: `choria-provisioner ${this.config.site}`.trim(),
        signal: this.#stop.signal,
      });
    } catch (err) {
      if (this.#stop.signal.aborted) return undefined;
      throw new Error(`could not start the provisioner for site "${this.config.site}": ${errorText(err)}`, { cause: err });
    }
  }

  #updateGauges(): void {
    this.metrics.setBusyWorkers(this.#busy);
    this.metrics.setWaitingNodes(this.#hosts.size);
    this.metrics.setWorkQueueEntries(this.#queue.length);
  }

  /** The coordination gauges, once a second from the sweep: a dashboard needs no fresher figure, the hot path no more gauge writes. */
  #reportCounts(): void {
    this.metrics.setCoordination(this.choria.identity, this.#hosts.size, this.#membership?.members().length ?? 1, this.#foreign.size);
    this.metrics.setQuarantined(this.#history.quarantinedCount());
  }

  /** Ends a node's quarantine (and back-off); true when it was quarantined. It is tried with the next discovery or event. */
  release(identity: string): boolean {
    const was = this.#history.release(identity, Date.now());
    if (was) this.logger.info(`Released ${identity} from quarantine on request`);
    this.#reportCounts();
    return was;
  }

  /** Ends a node's quarantine and back-off and queues it now; false when it is already on the list (or the queue is full). */
  retry(identity: string): boolean {
    this.#history.release(identity, Date.now());
    return this.offer(identity, 'operator');
  }

  /**
   * /readyz for this site: connected, and able to provision: the leader with leader election, a
   * member of a formed group (or lock-only) with active/active, simply connected without either.
   */
  readiness(): SiteReadiness {
    const site = this.config.site;
    if (this.#state !== 'running') return { site, ready: false, reason: this.#state === 'new' || this.#state === 'starting' ? 'starting' : 'stopped' };
    if (this.#client === undefined || this.#client.isClosed) return { site, ready: false, reason: 'not connected to the broker' };
    if (this.#election !== undefined && this.#election.isLeader !== true) return { site, ready: false, reason: 'standby: another instance leads the election' };
    if (this.#membership !== undefined && !this.#membership.ready) return { site, ready: false, reason: 'active/active membership still forming' };
    return { site, ready: true, reason: this.#effectiveCoordination() === 'lock_only' ? 'ready (active/active lock-only)' : 'ready' };
  }

  /** Every node this instance knows: the active list first, in the order added; then the history's others, least recently changed first. */
  *#known(): Generator<KnownNode> {
    const seen = new Set<string>();
    for (const e of this.#hosts.active()) {
      seen.add(e.identity);
      yield { identity: e.identity, state: e.state, entry: e, record: this.#history.get(e.identity) };
    }
    for (const r of this.#history.records()) {
      if (seen.has(r.identity)) continue;
      yield { identity: r.identity, state: r.quarantinedAt !== undefined ? 'quarantined' : r.outcome, entry: undefined, record: r };
    }
  }

  /**
   * One page of this site's nodes, filtered by state and identity, sorted (ties by identity):
   * only the page is described, so paging through 100,000 nodes stays cheap.
   */
  nodes(query: Omit<NodeQuery, 'site'>): NodePage {
    return pageOf(this.#known(), query, this.config.site, Date.now());
  }

  /** A snapshot for the /status endpoint and `choria-provisioner status`. */
  status(opts: StatusQuery = {}): ProvisionerStatus {
    const limit = opts.limit ?? 1000;
    const hosts: HostStatus[] = [];
    const counts: Record<string, number> = {};
    let truncated = false;
    const now = Date.now();
    // Every host is counted; only the first `limit` are described (formatting 50,000 of them for
    // a status poll with limit 0 took longer than the poll interval).
    for (const n of this.#known()) {
      counts[n.state] = (counts[n.state] ?? 0) + 1;
      if (hosts.length < limit) hosts.push(describeNode(n, now));
      else truncated = true;
    }
    const leader = this.#election?.isLeader;
    return {
      site: this.config.site,
      identity: this.choria.identity,
      version: this.version,
      connected: this.#client !== undefined && !this.#client.isClosed,
      leaderElection: this.config.leaderElection,
      ...(leader !== undefined ? { leader } : {}),
      paused: this.paused,
      dryRun: this.#opts.dryRun === true,
      coordination: {
        mode: this.config.coordination,
        effective: this.#effectiveCoordination(),
        instance: this.choria.identity,
        ...(this.#membership !== undefined ? { membership: this.#membership.view(), foreignNodes: this.#foreign.size } : {}),
      },
      history: this.#historySync.status(),
      queue: this.#queue.length,
      queueCapacity: this.#queue.capacity,
      busyWorkers: this.#busy,
      workers: this.config.workers,
      hostCounts: counts,
      hosts,
      hostsTruncated: truncated,
      recent: this.#throughput.series(now),
    };
  }
}


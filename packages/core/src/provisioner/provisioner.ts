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
import type { HostResult, HostRunner, Outcome } from '../host/types.js';
import { PauseFlag } from '../util/pause.js';
import { silentLogger } from '../util/logger.js';
import { createHelperRunner, type HelperFunction, type HelperRunner } from '../host/helper/index.js';
import { createHostRunner } from '../host/host.js';
import { LeaderElection } from './election/index.js';
import { HostList, type DiscoverySource, type HostEntry } from './host-list.js';
import { QueueClosedError, QueueFullError, WorkQueue } from './work-queue.js';
import { VERSION } from '../util/version.js';
import { errorText } from '../util/values.js';

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
  /** how long stop() waits for in-flight work, default 10 s */
  readonly stopTimeoutMs?: number;
  readonly version?: string;
}

export interface HostStatus {
  identity: string;
  state: 'queued' | 'provisioning' | 'held' | Outcome;
  step?: string;
  attempts: number;
  source?: DiscoverySource;
  lastError?: string;
  discoveredAt?: string;
  updatedAt: string;
}

export interface ProvisionerStatus {
  site: string;
  identity: string;
  version: string;
  connected: boolean;
  leaderElection: boolean;
  leader?: boolean;
  paused: boolean;
  queue: number;
  queueCapacity: number;
  busyWorkers: number;
  workers: number;
  hostCounts: Record<string, number>;
  hosts: HostStatus[];
  hostsTruncated: boolean;
}

const iso = (ms: number): string => new Date(ms).toISOString();

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
    this.logger.info(`Starting choria-provisioner ${this.version} for site "${this.config.site}" with ${this.config.workers} workers`);
    if (this.config.leaderElection) this.pause();

    this.#helper = this.#makeHelper();
    const client = this.#opts.client ?? (await this.#connect());
    if (client === undefined) return; // stopped while connecting
    if (this.#stop.signal.aborted) {
      if (this.#opts.client === undefined) await client.close().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#runner =
      this.#opts.hostRunner ??
      createHostRunner({ config: this.config, client, helper: this.#helper, metrics: this.metrics, pause: this.pauseFlag });

    try {
      await client.publishStartupEvent({ component: 'provisioner', version: this.version });
    } catch (err) {
      this.logger.warn(`Could not publish the provisioner startup event: ${errorText(err)}`);
    }

    if (this.config.leaderElection) this.#startElection(client);

    const sub = client.subscribeLifecycle('startup', this.config.lifecycleComponent, (ev) => this.#onEvent(ev), {
      onInvalid: (err) => {
        this.metrics.eventError();
        this.logger.debug(`Ignoring an invalid lifecycle event: ${err.message}`);
      },
    });
    this.#unsubscribe = () => sub.unsubscribe();

    for (let i = 0; i < this.config.workers; i++) this.#workers.push(this.#work(i));
    this.#timers.push(setInterval(() => void this.discover(), this.config.intervalMs));
    this.#timers.push(setInterval(() => this.#sweepHeld(), 1_000));
    this.#state = 'running';
    this.#updateGauges();
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
    await this.#election?.stop();
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
    await this.#helper?.close().catch(() => undefined);
    if (this.#opts.client === undefined) await this.#client?.close().catch(() => undefined);
    this.#state = 'stopped';
    this.logger.info(`Stopped provisioner for site "${this.config.site}"`);
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
    const { result, entry } = this.#hosts.offer(identity, source, now, this.config.intervalMs, reportedVersion);
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
    else this.metrics.eventDiscovered();
    this.logger.info(`Adding ${identity} to the provision list after ${source === 'discovery' ? 'discovering it' : 'receiving an event'}`);
    this.#updateGauges();
    return true;
  }

  #onEvent(ev: LifecycleEvent): void {
    if (ev.type !== 'startup') return;
    this.#hosts.forgetConfigured(ev.identity);
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
    const abort = new AbortController();
    entry.abort = abort;
    const onStop = (): void => abort.abort(this.#stop.signal.reason);
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    this.#busy++;
    this.#updateGauges();
    const logger = this.logger.child({ host: entry.identity, worker });
    let result: HostResult;
    try {
      const configuredAt = this.#hosts.configuredAt(entry.identity);
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
      result = { outcome: 'failed', message: errorText(err), error: err instanceof Error ? err : new Error(String(err)) };
    } finally {
      this.#stop.signal.removeEventListener('abort', onStop);
      entry.abort = undefined;
      this.#busy--;
    }
    this.#finish(entry, result, logger);
  }

  #finish(entry: HostEntry, result: HostResult, logger: Logger): void {
    const now = Date.now();
    switch (result.outcome) {
      case 'provisioned':
      case 'shutdown':
      case 'upgraded':
        this.metrics.provisioned();
        break;
      case 'skipped_locked':
        break;
      default:
        this.metrics.provisionError();
    }
    this.metrics.outcome(result.outcome);
    this.#hosts.record(entry, result.outcome, result.message, now, result.configured === true);
    entry.step = undefined;
    entry.updatedAt = now;
    const current = this.#hosts.isCurrent(entry);
    if (current && (result.outcome === 'provisioned' || result.outcome === 'shutdown')) {
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
      case 'skipped_locked':
        logger.info(`Skipping ${entry.identity}: another provisioner holds its provisioning lock`);
        break;
      default:
        logger.error(`Could not provision ${entry.identity}: ${result.message ?? result.outcome}`);
    }
    this.#updateGauges();
  }

  #sweepHeld(): void {
    const now = Date.now();
    let changed = false;
    while (this.#held.length > 0) {
      const e = this.#held[0] as HostEntry;
      if ((e.heldUntil ?? 0) > now) break;
      this.#held.shift();
      if (this.#hosts.isCurrent(e) && e.state === 'held') {
        this.#hosts.remove(e);
        changed = true;
      }
    }
    if (changed) this.#updateGauges();
  }

  /** Leadership lost: forget every host and queued entry; in-flight work is aborted. */
  #dropAll(): void {
    const dropped = this.#hosts.clear();
    this.#queue.clear();
    this.#held.length = 0;
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
    if (h !== undefined) return isHelperRunner(h) ? h : createHelperRunner({ fn: h, timeoutMs: this.config.helperTimeoutMs });
    if (this.config.helperMode === 'pool') {
      return createHelperRunner({
        command: this.config.helper,
        mode: 'pool',
        poolSize: this.config.helperPoolSize,
        poolDepth: this.config.helperPoolDepth,
        timeoutMs: this.config.helperTimeoutMs,
      });
    }
    return createHelperRunner({ command: this.config.helper, timeoutMs: this.config.helperTimeoutMs });
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

  /** A snapshot for the /status endpoint and `choria-provisioner status`. */
  status(opts: { limit?: number } = {}): ProvisionerStatus {
    const limit = opts.limit ?? 1000;
    const hosts: HostStatus[] = [];
    const counts: Record<string, number> = {};
    const seen = new Set<string>();
    let truncated = false;
    // Every host is counted; only the first `limit` are described (formatting 50,000 of them for
    // a status poll with limit 0 took longer than the poll interval).
    const add = (state: string, describe: () => HostStatus): void => {
      counts[state] = (counts[state] ?? 0) + 1;
      if (hosts.length < limit) hosts.push(describe());
      else truncated = true;
    };
    for (const e of this.#hosts.active()) {
      seen.add(e.identity);
      add(e.state, () => {
        const past = this.#hosts.pastOutcome(e.identity);
        return {
          identity: e.identity,
          state: e.state,
          ...(e.step !== undefined ? { step: e.step } : {}),
          attempts: e.attempts,
          source: e.source,
          ...(past?.message !== undefined && past.outcome !== 'provisioned' ? { lastError: past.message } : {}),
          discoveredAt: iso(e.discoveredAt),
          updatedAt: iso(e.updatedAt),
        };
      });
    }
    for (const p of this.#hosts.history()) {
      if (seen.has(p.identity)) continue;
      add(p.outcome, () => ({
        identity: p.identity,
        state: p.outcome,
        attempts: p.attempts,
        ...(p.message !== undefined ? { lastError: p.message } : {}),
        updatedAt: iso(p.at),
      }));
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
      queue: this.#queue.length,
      queueCapacity: this.#queue.capacity,
      busyWorkers: this.#busy,
      workers: this.config.workers,
      hostCounts: counts,
      hosts,
      hostsTruncated: truncated,
    };
  }
}


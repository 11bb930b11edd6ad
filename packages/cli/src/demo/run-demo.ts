// `choria-provisioner demo`: the whole job on an embedded default. A private nats-server, a
// simulated fleet of provisioning-mode servers that boot over a few seconds and announce
// themselves with startup events, and a provisioner using an example helper as a JSON-lines pool;
// progress while it runs, a summary at the end, and everything it started stopped again.
import { availableParallelism, tmpdir } from 'node:os';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  loadSite,
  ConfigError,
  Provisioner,
  Registry,
  createHelperRunner,
  createLogger,
  silentLogger,
  startMonitorServer,
  monitorRoutes,
  type HelperRunner,
  type Logger,
  type MonitorServer,
} from '@choria-provisioner/core';
import { DEFAULT_WATCHDOG_S, SimulatedFleet, startWatchdog } from '@choria-provisioner/simulator';
import { STOP_SIGNALS, type ProcessGuard } from '../process-guard.js';
import { EXIT, type CliIO } from '../io.js';
import { makeDemoKeys, type DemoMode } from './keys.js';
import { NATS_INSTALL_HINT, findNatsServer, startDemoNats, type DemoNatsServer } from './nats.js';
import { ProgressReporter, type ProgressSnapshot, type TerminalSink } from './progress.js';
import { failedAttempts, formatSummary, verdict, type DemoResult } from './summary.js';

export interface DemoSettings {
  readonly mode: DemoMode;
  readonly nodes: number;
  /** provisioner workers; default 4 x CPU count */
  readonly workers?: number | undefined;
  readonly debug: boolean;
  /** where NATS_SERVER_BIN and PATH are read (default process.env) */
  readonly env?: NodeJS.ProcessEnv;
  /** a terminal for the live progress line; plain lines every 2 s without one */
  readonly terminal?: TerminalSink | undefined;
  /** where the children are registered for an uncaught error (bin.ts passes the process's) */
  guard?: ProcessGuard;
  /** stop cleanly on SIGHUP/SIGINT/SIGTERM (default true) */
  readonly handleSignals?: boolean;
  /** give up after this long (default 120 s + 0.2 s per node) */
  readonly deadlineMs?: number;
  /** seconds the event loop may stand still before the watchdog ends the demo (default 30; 0: off) */
  readonly watchdogS?: number;
}

/** The run ended but not every node was provisioned cleanly (the summary says why). */
export const EXIT_NOT_PROVISIONED = 1;

const TOKEN = 's3cret';
const SITE = 'demo';
const BOOT_SPREAD_MS = 3_000;
/** restart splay and the 2 s restart delay of the nodes, scaled: a restart completes in ~60 ms */
const TIME_SCALE = 0.02;
/**
 * The configured discovery interval is the minimum of 1 minute; startup events find the nodes long
 * before that. A node whose attempt failed would only come back at the next discovery, so the demo
 * asks for one itself when the provisioner is idle and nodes still wait.
 */
const IDLE_DISCOVERY_MS = 5_000;
const WAIT_TICK_MS = 100;

/**
 * The package's helpers/: the example helpers the build copies from examples/helpers/
 * (scripts/copy-demo-helpers.mjs); two levels up from src/demo/ and from dist/demo/.
 */
const HELPERS_DIR = fileURLToPath(new URL('../../helpers/', import.meta.url));

export function defaultWorkers(): number {
  return 4 * availableParallelism();
}

export function defaultDeadlineMs(nodes: number): number {
  return 120_000 + 200 * nodes;
}

/** Quotes one word for the helper command line (split like a shell, run without one). */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Records each helper run's duration for the p50/p99 of the summary. */
function timedRunner(runner: HelperRunner, durations: number[]): HelperRunner {
  return {
    run: async (req, opts) => {
      const result = await runner.run(req, opts);
      durations.push(result.durationMs);
      return result;
    },
    close: () => runner.close(),
  };
}

async function outcomeCounts(registry: Registry): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric('choria_provisioner_outcomes');
  const out: Record<string, number> = {};
  if (metric === undefined) return out;
  for (const v of (await metric.get()).values) {
    const outcome = v.labels['outcome'];
    if (typeof outcome === 'string' && v.labels['site'] === SITE) out[outcome] = v.value;
  }
  return out;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs the demo; resolves to the exit code (0 only when every node was provisioned without violations). */
export async function runDemo(settings: DemoSettings, io: CliIO): Promise<number> {
  const nats = findNatsServer(settings.env ?? process.env);
  if (!nats.found) {
    io.err(`choria-provisioner demo: ${nats.reason}\n${NATS_INSTALL_HINT}`);
    return EXIT.runtime;
  }

  const cleanups: { what: string; run: () => Promise<void> | void }[] = [];
  const watchdogS = settings.watchdogS ?? DEFAULT_WATCHDOG_S;
  const watchdog = watchdogS > 0 ? startWatchdog({ name: 'choria-provisioner demo', limitMs: watchdogS * 1000 }) : undefined;
  if (watchdog !== undefined) cleanups.push({ what: 'the watchdog', run: () => watchdog.stop() });
  watchdog?.doing(`starting the demo (${settings.mode}, ${settings.nodes} nodes)`);
  const cleanUp = async (): Promise<void> => {
    for (const c of cleanups.splice(0).reverse()) {
      try {
        await c.run();
      } catch (err) {
        io.err(`choria-provisioner demo: could not stop ${c.what}: ${errText(err)}`);
      }
    }
  };

  // A signal ends the wait; the cleanup below then stops everything in order.
  const interrupt = new AbortController();
  if (settings.handleSignals ?? true) {
    const onSignal = (signal: NodeJS.Signals): void => interrupt.abort(new Error(`interrupted by ${signal}`));
    for (const s of STOP_SIGNALS) process.on(s, onSignal);
    cleanups.push({
      what: 'the signal handlers',
      run: () => {
        for (const s of STOP_SIGNALS) process.off(s, onSignal);
      },
    });
  }
  const interrupted = new Promise<never>((_, reject) => {
    interrupt.signal.addEventListener('abort', () => reject(interrupt.signal.reason as Error), { once: true });
  });
  interrupted.catch(() => undefined);
  /** Waits for a start-up step unless a signal comes first; what starts after the signal is stopped again. */
  const untilInterrupted = async <T>(starting: Promise<T>, stopLate: (started: T) => Promise<void>): Promise<T> => {
    try {
      return await Promise.race([starting, interrupted]);
    } catch (err) {
      if (interrupt.signal.aborted) starting.then(stopLate, () => undefined).catch(() => undefined);
      throw err;
    }
  };

  const workers = settings.workers ?? defaultWorkers();
  const logger: Logger = settings.debug ? createLogger({ debug: true, logfile: 'stderr', site: SITE }) : silentLogger();
  let progress: ProgressReporter | undefined;
  try {
    io.out(`choria-provisioner demo: mode ${settings.mode}, ${settings.nodes} simulated servers, ${workers} workers`);

    const broker: DemoNatsServer = await untilInterrupted(startDemoNats(nats.bin), (b) => b.stop());
    // Should this process exit without its cleanup, the broker must not outlive it.
    const killBroker = (): void => broker.killNow();
    process.on('exit', killBroker);
    const forgetBroker = settings.guard?.onFatal(killBroker);
    cleanups.push({
      what: `nats-server (pid ${broker.pid})`,
      run: async () => {
        await broker.stop();
        process.off('exit', killBroker);
        forgetBroker?.();
      },
    });
    io.out(`  nats-server ${broker.url} (pid ${broker.pid}, ${nats.bin})`);

    const dir = mkdtempSync(join(tmpdir(), 'choria-demo-'));
    cleanups.push({ what: `the temp dir ${dir}`, run: () => rmSync(dir, { recursive: true, force: true }) });
    const keys = await makeDemoKeys(settings.mode, dir);

    const helperFile = join(HELPERS_DIR, keys.helperScript);
    if (!existsSync(helperFile)) throw new Error(`the demo helper ${helperFile} is missing: this installation of choria-provisioner is incomplete (in a checkout, run "npm run build")`);
    const choriaFile = join(dir, 'choria.cfg');
    writeFileSync(choriaFile, [`identity = provisioner.demo`, `plugin.choria.middleware_hosts = ${broker.url}`, 'plugin.security.provider = file', ''].join('\n'));
    const yamlFile = join(dir, 'provisioner.yaml');
    writeFileSync(
      yamlFile,
      [
        `site: ${SITE}`,
        `token: ${TOKEN}`,
        'choria_insecure: true',
        `workers: ${workers}`,
        'interval: 1m',
        `helper: ${JSON.stringify([process.execPath, helperFile, ...keys.helperArgs].map(shellWord).join(' '))}`,
        'helper_mode: pool',
        `helper_pool_size: ${Math.max(2, availableParallelism())}`,
        `loglevel: ${settings.debug ? 'debug' : 'info'}`,
        keys.yaml,
        '',
      ].join('\n'),
    );
    const { config, choria } = loadSite(yamlFile, { choriaConfig: choriaFile, onWarning: (w) => io.err(`warning: ${w}`) });

    // The runner is built from the YAML's helper settings, as the Provisioner would, but with the
    // helper's environment (broker URL, issuer key, CA dir) and a timing hook for the summary.
    const helperMs: number[] = [];
    const helper = timedRunner(
      createHelperRunner({
        command: config.helper,
        mode: config.helperMode,
        poolSize: config.helperPoolSize,
        poolDepth: config.helperPoolDepth,
        timeoutMs: config.helperTimeoutMs,
        env: { ...process.env, BROKER_URL: broker.url, ...keys.helperEnv },
      }),
      helperMs,
    );
    const registry = new Registry();
    const provisioner = new Provisioner({ config, choria, registry, logger, helper });
    const forgetHelpers = settings.guard?.onFatal(() => provisioner.killChildrenNow());
    cleanups.push({
      what: 'the provisioner',
      run: async () => {
        await provisioner.stop();
        forgetHelpers?.();
      },
    });

    const monitor: MonitorServer = await startMonitorServer({ port: 0, host: '127.0.0.1', registry, ...monitorRoutes([provisioner]) });
    cleanups.push({ what: 'the monitor endpoint', run: () => monitor.close() });
    const metricsUrl = `${monitor.url}/metrics`;
    const statusUrl = `${monitor.url}/status`;
    io.out(`  provisioner provisioner.demo, helper ${[keys.helperScript, ...keys.helperArgs].join(' ')} (pool of ${config.helperPoolSize})`);
    io.out(`  status page ${monitor.url}/  metrics ${metricsUrl}  status ${statusUrl}  (while the demo runs)`);

    await Promise.race([provisioner.start(), interrupted]);

    const fleetLogger = settings.debug ? createLogger({ debug: true, logfile: 'stderr', fields: { component: 'simulator' } }) : undefined;
    const fleet = await untilInterrupted(
      SimulatedFleet.start({
        servers: [broker.url],
        name: 'demo',
        count: settings.nodes,
        token: TOKEN,
        eventFormat: 'cloudevents',
        bootSpreadMs: BOOT_SPREAD_MS,
        timeScale: TIME_SCALE,
        ...keys.fleet,
        ...(fleetLogger !== undefined ? { logger: fleetLogger } : {}),
      }),
      (f) => f.stop(),
    );
    const startedAt = Date.now();
    // stopped before the provisioner (cleanups run in reverse): no more events while it winds down
    cleanups.push({ what: 'the simulated fleet', run: () => fleet.stop() });
    io.out(`  ${settings.nodes} simulated servers booting over ${BOOT_SPREAD_MS / 1000} s`);

    let doneAt: number | undefined;
    const sample = (): ProgressSnapshot => {
      const st = provisioner.status({ limit: 0 });
      const c = st.hostCounts;
      const n = (k: string): number => c[k] ?? 0;
      return {
        nodes: settings.nodes,
        found: Object.values(c).reduce((a, b) => a + b, 0),
        queued: n('queued'),
        provisioning: n('provisioning'),
        done: fleet.countByState().provisioned,
        // the nodes whose last attempt failed or was deferred wait for a retry
        failed: failedAttempts(c) + n('deferred'),
        elapsedMs: (doneAt ?? Date.now()) - startedAt,
      };
    };
    progress = new ProgressReporter({ sample, terminal: settings.terminal, line: (t) => io.out(t) });
    progress.start();

    const deadlineMs = settings.deadlineMs ?? defaultDeadlineMs(settings.nodes);
    let interruption: string | undefined;
    let lastDiscovery = Date.now();
    for (;;) {
      const provisioned = fleet.countByState().provisioned;
      watchdog?.doing(`provisioning in ${settings.mode} mode: ${provisioned} of ${settings.nodes} nodes provisioned`);
      if (provisioned >= settings.nodes) {
        doneAt = Date.now();
        break;
      }
      if (interrupt.signal.aborted) {
        interruption = `${errText(interrupt.signal.reason)} before every node was provisioned`;
        break;
      }
      if (Date.now() - startedAt > deadlineMs) {
        interruption = `the deadline of ${(deadlineMs / 1000).toFixed(0)} s passed before every node was provisioned`;
        break;
      }
      const st = provisioner.status({ limit: 0 });
      if (st.queue === 0 && st.busyWorkers === 0 && fleet.countByState().waiting > 0 && Date.now() - lastDiscovery > IDLE_DISCOVERY_MS) {
        lastDiscovery = Date.now();
        void provisioner.discover();
      }
      await sleep(WAIT_TICK_MS);
    }
    progress.stop();
    progress = undefined;
    watchdog?.doing('stopping the demo');

    const report = fleet.summary();
    const errors = [
      ...new Set(
        provisioner
          .status()
          .hosts.map((h) => h.lastError)
          .filter((e): e is string => e !== undefined),
      ),
    ].slice(0, 5);
    const result: DemoResult = {
      mode: settings.mode,
      nodes: settings.nodes,
      provisioned: report.totals.byState.provisioned,
      nodeStates: report.totals.byState,
      outcomes: await outcomeCounts(registry),
      violations: report.totals.violations,
      violationsByKind: report.totals.violationsByKind,
      elapsedMs: (doneAt ?? Date.now()) - startedAt,
      helperMs,
      errors,
      metricsUrl,
      statusUrl,
      interruption,
    };
    await cleanUp();
    io.out(formatSummary(result));
    return verdict(result).ok ? EXIT.ok : EXIT_NOT_PROVISIONED;
  } catch (err) {
    progress?.stop();
    if (err instanceof ConfigError) {
      io.err('choria-provisioner demo: the generated configuration was refused:');
      for (const r of err.reasons) io.err(`  - ${r}`);
    } else if (interrupt.signal.aborted) {
      io.err(`choria-provisioner demo: ${errText(interrupt.signal.reason)} while starting`);
    } else {
      io.err(`choria-provisioner demo: ${errText(err)}`);
    }
    await cleanUp();
    return interrupt.signal.aborted ? EXIT_NOT_PROVISIONED : EXIT.runtime;
  }
}

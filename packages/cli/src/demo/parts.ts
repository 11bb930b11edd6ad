// Starting what the demo runs, each part onto the stack that stops it: a private nats-server, the
// generated site configuration, a provisioner using an example helper as a JSON-lines pool (with
// its monitor port), and a simulated fleet of provisioning-mode servers that boot over a few
// seconds and announce themselves with startup events.
import { availableParallelism, tmpdir } from 'node:os';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import {
  loadSite,
  Provisioner,
  createHelperRunner,
  createLogger,
  startMonitorServer,
  monitorRoutes,
  type HelperRunner,
  type Logger,
  type Site,
} from '@choria-provisioner/core';
import { SimulatedFleet } from '@choria-provisioner/simulator';
import type { CliIO } from '../io.js';
import type { Interruption } from './interruption.js';
import { makeDemoKeys, type DemoKeys } from './keys.js';
import { demoRenewal, type DemoRenewal } from './renewal.js';
import { startDemoNats, type DemoNatsServer } from './nats.js';
import type { DemoSettings } from './settings.js';
import type { DemoStack } from './stack.js';

const TOKEN = 's3cret';
const SITE = 'demo';
const BOOT_SPREAD_MS = 3_000;
/** restart splay and the 2 s restart delay of the nodes, scaled: a restart completes in ~60 ms */
const TIME_SCALE = 0.02;

/**
 * The package's helpers/: the example helpers the build copies from examples/helpers/
 * (scripts/copy-demo-helpers.mjs); two levels up from src/demo/ and from dist/demo/.
 */
const HELPERS_DIR = fileURLToPath(new URL('../../helpers/', import.meta.url));

/** Quotes one word for the helper command line (split like a shell, run without one). */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** What the wait and the summary read once everything runs. */
export interface DemoParts {
  readonly provisioner: Provisioner;
  readonly fleet: SimulatedFleet;
  /** each helper run's duration in ms, for the summary's p50/p99 */
  readonly helperMs: readonly number[];
  readonly metricsUrl: string;
  readonly statusUrl: string;
  /** when the fleet started booting */
  readonly startedAt: number;
  /** with --renew: the renewal settings the site was given */
  readonly renewal: DemoRenewal | undefined;
}

export interface DemoStart {
  readonly settings: DemoSettings;
  readonly natsBin: string;
  readonly workers: number;
  readonly logger: Logger;
  readonly io: CliIO;
  readonly stack: DemoStack;
  readonly interruption: Interruption;
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

/** Starts the broker, the provisioner and the fleet; what started stays on the stack even when a later step fails. */
export async function startDemoParts(d: DemoStart): Promise<DemoParts> {
  const { io, stack, interruption } = d;
  const broker = await startBroker(d);
  const dir = mkdtempSync(join(tmpdir(), 'choria-demo-'));
  stack.defer(`the temp dir ${dir}`, () => rmSync(dir, { recursive: true, force: true }));
  const keys = await makeDemoKeys(d.settings.mode, dir);
  const renewal =
    d.settings.renew === true ? demoRenewal(d.settings.mode, d.settings.nodes, broker.url, dir) : undefined;
  const { config, choria } = writeSite(d, broker, keys, dir, renewal?.yaml ?? '');

  // The runner is built from the YAML's helper settings, as the Provisioner would, but with the
  // helper's environment (broker URL, issuer key, CA dir) and a timing hook for the summary.
  const helperMs: number[] = [];
  const helperSpec = {
    command: config.helper,
    mode: config.helperMode,
    poolSize: config.helperPoolSize,
    poolDepth: config.helperPoolDepth,
    timeoutMs: config.helperTimeoutMs,
  };
  const helper = timedRunner(
    createHelperRunner({
      ...helperSpec,
      env: { ...process.env, BROKER_URL: broker.url, ...keys.helperEnv, ...renewal?.helperEnv },
    }),
    helperMs,
  );
  const registry = new Registry();
  const provisioner = new Provisioner({ config, choria, registry, logger: d.logger, helper });
  const forgetHelpers = d.settings.guard?.onFatal(() => provisioner.killChildrenNow());
  stack.defer('the provisioner', async () => {
    await provisioner.stop();
    forgetHelpers?.();
  });

  const monitor = await startMonitorServer({ port: 0, host: '127.0.0.1', registry, ...monitorRoutes([provisioner]) });
  stack.defer('the monitor endpoint', () => monitor.close());
  const metricsUrl = `${monitor.url}/metrics`;
  const statusUrl = `${monitor.url}/status`;
  io.out(
    `  provisioner provisioner.demo, helper ${[keys.helperScript, ...keys.helperArgs].join(' ')} ` +
      `(pool of ${config.helperPoolSize})`,
  );
  io.out(`  status page ${monitor.url}/  metrics ${metricsUrl}  status ${statusUrl}  (while the demo runs)`);

  await interruption.race(provisioner.start());

  const fleetLogger = d.settings.debug
    ? createLogger({ debug: true, logfile: 'stderr', fields: { component: 'simulator' } })
    : undefined;
  const fleet = await interruption.starting(
    SimulatedFleet.start({
      servers: [broker.url],
      name: 'demo',
      count: d.settings.nodes,
      token: TOKEN,
      eventFormat: 'cloudevents',
      bootSpreadMs: BOOT_SPREAD_MS,
      timeScale: TIME_SCALE,
      ...keys.fleet,
      ...renewal?.fleet,
      ...(fleetLogger !== undefined ? { logger: fleetLogger } : {}),
    }),
    (f) => f.stop(),
  );
  const startedAt = Date.now();
  // stopped before the provisioner: no more events while it winds down
  stack.defer('the simulated fleet', () => fleet.stop());
  io.out(`  ${d.settings.nodes} simulated servers booting over ${BOOT_SPREAD_MS / 1000} s`);
  return { provisioner, fleet, helperMs, metricsUrl, statusUrl, startedAt, renewal };
}

async function startBroker(d: DemoStart): Promise<DemoNatsServer> {
  const broker = await d.interruption.starting(startDemoNats(d.natsBin), (b) => b.stop());
  // Should this process exit without its cleanup, the broker must not outlive it.
  const killBroker = (): void => broker.killNow();
  process.on('exit', killBroker);
  const forgetBroker = d.settings.guard?.onFatal(killBroker);
  d.stack.defer(`nats-server (pid ${broker.pid})`, async () => {
    await broker.stop();
    process.off('exit', killBroker);
    forgetBroker?.();
  });
  d.io.out(`  nats-server ${broker.url} (pid ${broker.pid}, ${d.natsBin})`);
  return broker;
}

/**
 * Writes the site's provisioner YAML and Choria client configuration into `dir` and loads them as the command would.
 */
function writeSite(d: DemoStart, broker: DemoNatsServer, keys: DemoKeys, dir: string, renewalYaml: string): Site {
  const helperFile = join(HELPERS_DIR, keys.helperScript);
  if (!existsSync(helperFile))
    throw new Error(
      `the demo helper ${helperFile} is missing: this installation of choria-provisioner is incomplete ` +
        `(in a checkout, run "npm run build")`,
    );
  const choriaFile = join(dir, 'choria.cfg');
  writeFileSync(
    choriaFile,
    [
      `identity = provisioner.demo`,
      `plugin.choria.middleware_hosts = ${broker.url}`,
      'plugin.security.provider = file',
      '',
    ].join('\n'),
  );
  const yamlFile = join(dir, 'provisioner.yaml');
  writeFileSync(
    yamlFile,
    [
      `site: ${SITE}`,
      `token: ${TOKEN}`,
      'choria_insecure: true',
      `workers: ${d.workers}`,
      'interval: 1m',
      `helper: ${JSON.stringify([process.execPath, helperFile, ...keys.helperArgs].map(shellWord).join(' '))}`,
      'helper_mode: pool',
      `helper_pool_size: ${Math.max(2, availableParallelism())}`,
      `loglevel: ${d.settings.debug ? 'debug' : 'info'}`,
      keys.yaml,
      renewalYaml,
      '',
    ].join('\n'),
  );
  return loadSite(yamlFile, { choriaConfig: choriaFile, onWarning: (w) => d.io.err(`warning: ${w}`) });
}

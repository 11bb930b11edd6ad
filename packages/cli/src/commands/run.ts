// `choria-provisioner run`: one Provisioner per --config file in this process, sharing one metrics
// registry (distinct `site` labels) and one monitor endpoint per distinct monitor_port.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Registry, collectDefaultMetrics } from 'prom-client';
import {
  loadSite,
  ConfigError,
  Provisioner,
  createLogger,
  startMonitorServer,
  monitorRoutes,
  type MonitorServer,
  type ProvisionerConfig,
  type ChoriaSettings,
} from '@choria-provisioner/core';
import { EXIT, type CliIO } from '../io.js';
import { waitForStopSignal, type ProcessGuard } from '../process-guard.js';

/** The TLS files the sites on one monitor port name: all the same, or none. */
function monitorTls(configs: readonly ProvisionerConfig[]): { cert: string; key: string } | undefined {
  const wanted = new Set(configs.map((c) => `${c.monitorTlsCert}\n${c.monitorTlsKey}`));
  if (wanted.size > 1)
    throw new Error(
      `the sites on monitor port ${configs[0]?.monitorPort ?? ''} name different monitor_tls_cert / monitor_tls_key ` +
        `files (${configs.map((c) => c.source).join(', ')})`,
    );
  const c = configs[0];
  if (c === undefined || c.monitorTlsCert === '') return undefined;
  const read = (file: string, key: string): string => {
    try {
      return readFileSync(file, 'utf8');
    } catch (err) {
      throw new Error(
        `could not read ${key} ${file} (${c.source}): ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  };
  return { cert: read(c.monitorTlsCert, 'monitor_tls_cert'), key: read(c.monitorTlsKey, 'monitor_tls_key') };
}

export interface RunOptions {
  configs: string[];
  /** every fetch, check and helper run, nothing that changes a node */
  dryRun?: boolean;
  choriaConfig: string | undefined;
  pidFile: string | undefined;
  debug: boolean;
  monitorAddress: string;
  /** for tests: resolves when the command should stop instead of waiting for a signal */
  until?: Promise<void>;
  /** where the helper processes are registered for an uncaught error */
  guard?: ProcessGuard;
}

interface Site {
  file: string;
  config: ProvisionerConfig;
  choria: ChoriaSettings;
}

function loadSites(opts: RunOptions, io: CliIO): Site[] | undefined {
  const sites: Site[] = [];
  let failed = false;
  for (const file of opts.configs) {
    try {
      const { config, choria } = loadSite(file, {
        choriaConfig: opts.choriaConfig,
        onWarning: (w) => io.err(`warning: ${w}`),
      });
      sites.push({ file, config, choria });
    } catch (err) {
      failed = true;
      if (err instanceof ConfigError) {
        io.err(`choria-provisioner: could not load ${file}:`);
        for (const r of err.reasons) io.err(`  - ${r}`);
      } else {
        io.err(`choria-provisioner: could not load ${file}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  const names = new Map<string, string>();
  for (const s of sites) {
    const prev = names.get(s.config.site);
    if (prev !== undefined) {
      io.err(
        `choria-provisioner: ${s.file} and ${prev} both use site "${s.config.site}": ` +
          `every config needs its own site so metrics can tell them apart`,
      );
      failed = true;
    }
    names.set(s.config.site, s.file);
  }
  return failed ? undefined : sites;
}

export async function runCommand(opts: RunOptions, io: CliIO): Promise<number> {
  const sites = loadSites(opts, io);
  if (sites === undefined) return EXIT.config;

  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const provisioners = sites.map(
    (s) =>
      new Provisioner({
        config: s.config,
        choria: s.choria,
        registry,
        logger: createLogger({
          logfile: s.config.logfile,
          loglevel: s.config.loglevel,
          debug: opts.debug,
          site: s.config.site,
        }),
        ...(opts.dryRun === true ? { dryRun: true } : {}),
      }),
  );

  // Pool helpers are children of this process: none may outlive it, even after an uncaught error.
  const forgetChildren = opts.guard?.onFatal(() => {
    for (const p of provisioners) p.killChildrenNow();
  });
  const monitors: MonitorServer[] = [];
  const ports = [...new Set(sites.map((s) => s.config.monitorPort).filter((p) => p > 0))];
  try {
    for (const port of ports) {
      const tls = monitorTls(sites.filter((s) => s.config.monitorPort === port).map((s) => s.config));
      monitors.push(
        await startMonitorServer({
          port,
          ...(tls !== undefined ? { tls } : {}),
          host: opts.monitorAddress,
          registry,
          ...monitorRoutes(provisioners),
        }),
      );
    }
    if (opts.pidFile !== undefined) writeFileSync(opts.pidFile, `${process.pid}\n`);
  } catch (err) {
    io.err(`choria-provisioner: ${err instanceof Error ? err.message : String(err)}`);
    await Promise.all(monitors.map((m) => m.close()));
    forgetChildren?.();
    return EXIT.runtime;
  }

  const waiter = opts.until === undefined ? waitForStopSignal() : undefined;
  const stopSignal: Promise<unknown> = opts.until ?? waiter?.signal ?? Promise.resolve();
  try {
    // Each instance connects (and keeps retrying) on its own: one broker being down does not stop
    // the others, and a signal while an instance is still connecting stops everything at once.
    const started = Promise.all(provisioners.map((p) => p.start()));
    const first = await Promise.race([
      started.then(() => 'started' as const),
      stopSignal.then(() => 'signal' as const),
    ]);
    if (first === 'started') await stopSignal;
  } catch (err) {
    io.err(`choria-provisioner: ${err instanceof Error ? err.message : String(err)}`);
    await shutDown();
    return EXIT.runtime;
  }
  await shutDown();
  return EXIT.ok;

  async function shutDown(): Promise<void> {
    waiter?.dispose();
    await Promise.allSettled(provisioners.map((p) => p.stop()));
    await Promise.all(monitors.map((m) => m.close()));
    forgetChildren?.();
    if (opts.pidFile !== undefined) rmSync(opts.pidFile, { force: true });
  }
}

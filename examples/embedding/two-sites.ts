// Two provisioning sites in one Node.js process, using the library instead of the CLI:
//  * each site has its own broker, configuration, workers and logger;
//  * the helper is an in-process function (no program to start per node);
//  * both sites share one prom-client registry (the `site` label tells them apart) and one
//    monitoring endpoint serving /metrics and /status.
//
// Run it (after `npm run build`) against two brokers whose provisioning-mode servers accept the
// token "s3cret", e.g. two local nats-servers with `choria-simulator` fleets on them; see
// docs/embedding.md for how to run a TypeScript file.
//   two-sites.ts nats://127.0.0.1:4301 nats://127.0.0.1:4302
import { pathToFileURL } from 'node:url';
import { Registry, collectDefaultMetrics } from 'prom-client';
import {
  Provisioner,
  createLogger,
  parseSite,
  startMonitorServer,
  type HelperFunction,
  type Logger,
  type MonitorServer,
} from '@choria-provisioner/core';

export interface SiteSpec {
  /** the `site` label on every metric; also picks the brokers the provisioned nodes will use */
  readonly site: string;
  /** the provisioning broker of this site, e.g. nats://broker.lon.example.net:4222 */
  readonly broker: string;
  /** the provisioning token of this site's nodes (the `cht` claim of their provisioning JWT) */
  readonly token: string;
  readonly workers?: number;
}

export interface TwoSitesOptions {
  readonly sites: readonly [SiteSpec, SiteSpec];
  /** defaults to a fresh registry with Node.js process metrics */
  readonly registry?: Registry;
  /** each site logs through a child of this logger with a `site` field; default: stdout at info */
  readonly logger?: Logger;
  /** serve /metrics and /status for both sites; port 0 picks a free port */
  readonly monitor?: { readonly port: number; readonly host?: string };
}

export interface RunningSites {
  readonly registry: Registry;
  readonly provisioners: readonly Provisioner[];
  readonly monitor: MonitorServer | undefined;
  stop(): Promise<void>;
}

/** The site's helper: every node gets the brokers of the site it was found in. */
export function siteHelper(site: string): HelperFunction {
  return (req) => {
    // The inventory arrives as a JSON string, exactly as a helper program sees it on stdin.
    const inventory: unknown = JSON.parse(req.inventory);
    const version =
      typeof inventory === 'object' && inventory !== null && 'version' in inventory
        ? String(inventory.version)
        : 'unknown';
    return {
      msg: `${req.identity} (Choria ${version}) joins site ${site}`,
      configuration: {
        identity: req.identity,
        'plugin.choria.server.provision': 'false',
        'plugin.choria.middleware_hosts': `nats://broker.${site}.example.net:4222`,
        registerinterval: '300',
      },
    };
  };
}

// In a real deployment these come from files (loadProvisionerConfig, loadChoriaConfig) with TLS and
// broker_provisioning_password; inline text keeps the example self-contained against a plain broker.
function siteProvisioner(spec: SiteSpec, registry: Registry, logger: Logger): Provisioner {
  const yaml = [
    `site: ${spec.site}`,
    `token: ${JSON.stringify(spec.token)}`,
    `workers: ${spec.workers ?? 4}`,
    'interval: 5m',
    'choria_insecure: true',
  ].join('\n');
  const choriaText = [
    `identity = provisioner.${spec.site}.example.net`,
    `plugin.choria.middleware_hosts = ${spec.broker}`,
    'plugin.security.provider = file',
  ].join('\n');
  const { config, choria } = parseSite(
    { yaml, yamlSource: `${spec.site}.yaml`, choria: choriaText, choriaSource: `${spec.site}.cfg` },
    { requireHelper: false, onWarning: (w) => logger.warn(w) },
  );
  return new Provisioner({
    config,
    choria,
    registry,
    logger: logger.child({ site: spec.site }),
    helper: siteHelper(spec.site),
  });
}

function registryWithProcessMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Starts both sites (and the monitor endpoint when asked); stop() shuts everything down. */
export async function runTwoSites(options: TwoSitesOptions): Promise<RunningSites> {
  if (options.sites[0].site === options.sites[1].site) {
    throw new Error(`both sites are called "${options.sites[0].site}": metrics could not tell them apart`);
  }
  const registry = options.registry ?? registryWithProcessMetrics();
  const logger = options.logger ?? createLogger({ loglevel: 'info' });
  const provisioners = options.sites.map((spec) => siteProvisioner(spec, registry, logger));

  let monitor: MonitorServer | undefined;
  if (options.monitor !== undefined) {
    monitor = await startMonitorServer({
      port: options.monitor.port,
      ...(options.monitor.host !== undefined ? { host: options.monitor.host } : {}),
      registry,
      // the same shape `choria-provisioner run` serves, so `choria-provisioner status` can read it
      status: () => ({ sites: provisioners.map((p) => p.status()) }),
    });
  }

  const stop = async (): Promise<void> => {
    await Promise.allSettled(provisioners.map((p) => p.stop()));
    await monitor?.close();
  };
  try {
    // Each site connects on its own: one unreachable broker does not hold up the other.
    await Promise.all(provisioners.map((p) => p.start()));
  } catch (err) {
    await stop();
    throw err;
  }
  return { registry, provisioners, monitor, stop };
}

async function main(argv: readonly string[]): Promise<number> {
  const [lon, nyc] = argv;
  if (lon === undefined || nyc === undefined) {
    process.stderr.write('usage: two-sites.ts <broker URL of site lon> <broker URL of site nyc>\n');
    return 2;
  }
  const running = await runTwoSites({
    sites: [
      { site: 'lon', broker: lon, token: 's3cret' },
      { site: 'nyc', broker: nyc, token: 's3cret' },
    ],
    monitor: { port: 8080, host: '127.0.0.1' },
  });
  process.stdout.write(`provisioning sites lon and nyc; metrics and status on ${running.monitor?.url ?? '(none)'}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await running.stop();
  return 0;
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`two-sites: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

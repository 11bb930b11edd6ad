// Configurations, Choria settings and clients for tests against a test broker.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ChoriaClient,
  applyProvisionerOverrides,
  parseChoriaConfig,
  parseProvisionerConfig,
  silentLogger,
  type ChoriaSettings,
  type ProvisionerConfig,
} from '@choria-provisioner/core/internal';

/** A provisioner config from YAML text (helper optional: tests usually inject a function). */
export function testConfig(yaml: string, source = 'test.yaml'): ProvisionerConfig {
  const defaults: Record<string, string> = { token: 's3cret', site: 'test', workers: '4', choria_insecure: 'true' };
  const given = new Set([...yaml.matchAll(/^([a-z_]+):/gm)].map((m) => m[1]));
  const head = Object.entries(defaults)
    .filter(([k]) => !given.has(k))
    .map(([k, v]) => `${k}: ${v}\n`)
    .join('');
  return parseProvisionerConfig(head + yaml, source, { requireHelper: false, onWarning: () => undefined });
}

/** Choria client settings for an insecure local broker, after the provisioner overrides. */
export function testSettings(
  url: string,
  config: ProvisionerConfig,
  identity = 'provisioner.example.net',
  extra = '',
): ChoriaSettings {
  const text =
    `identity = ${identity}\n` +
    `plugin.choria.middleware_hosts = ${url}\n` +
    `plugin.security.provider = file\n${extra}`;
  return applyProvisionerOverrides(parseChoriaConfig(text, 'test-choria.cfg'), config);
}

/**
 * A valid configuration for the CLI as files in `dir` (provisioner.yaml and the Choria client
 * configuration it names, for a broker that need not run): what a test runs `validate` on.
 */
export function writeCliConfig(dir: string, site: string): string {
  const choria = join(dir, 'choria.cfg');
  writeFileSync(
    choria,
    'identity = prov.example.net\nplugin.choria.middleware_hosts = nats://127.0.0.1:4222\n' +
      'plugin.security.provider = file\n',
  );
  const config = join(dir, 'provisioner.yaml');
  writeFileSync(
    config,
    `site: ${site}\ntoken: s3cret\nhelper: /bin/true\nchoria_insecure: true\nchoria_config: ${choria}\n`,
  );
  return config;
}

/** A connected client; `fleetReconnectMs` sets its broker link's fleet-reconnect time (default 5 s). */
export async function testClient(settings: ChoriaSettings, fleetReconnectMs?: number): Promise<ChoriaClient> {
  const fleet = fleetReconnectMs !== undefined ? { fleetReconnectMs } : {};
  return await ChoriaClient.connect(settings, { logger: silentLogger(), name: 'test', ...fleet });
}

/** ChoriaSettings as the loader would make them, with `overrides`: for code that takes settings, not files. */
export function choriaSettingsWith(overrides: Partial<ChoriaSettings> = {}): ChoriaSettings {
  return {
    source: '<test>',
    identity: 'provisioner.example.net',
    middlewareHosts: ['nats://127.0.0.1:1'],
    collectives: ['provisioning'],
    mainCollective: 'provisioning',
    securityProvider: 'file',
    protocolSecure: false,
    tls: false,
    certificateFile: undefined,
    keyFile: undefined,
    caFile: undefined,
    tokenFile: undefined,
    seedFile: undefined,
    certname: 'provisioner.example.net',
    natsUser: undefined,
    natsPassword: undefined,
    ttl: 60,
    discoveryTimeout: 1,
    loglevel: undefined,
    logfile: undefined,
    raw: {},
    ...overrides,
  };
}

// Shared pieces of the end-to-end tests: configs, Choria settings and clients for a test broker.
import { applyProvisionerOverrides, parseChoriaConfig, parseProvisionerConfig, type ChoriaSettings, type ProvisionerConfig } from '../../packages/core/src/config/index.js';
import { ChoriaClient } from '../../packages/core/src/choria/client.js';
import { silentLogger } from '../../packages/core/src/util/logger.js';

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
export function testSettings(url: string, config: ProvisionerConfig, identity = 'provisioner.example.net', extra = ''): ChoriaSettings {
  const text = `identity = ${identity}\nplugin.choria.middleware_hosts = ${url}\nplugin.security.provider = file\n${extra}`;
  return applyProvisionerOverrides(parseChoriaConfig(text, 'test-choria.cfg'), config);
}

export async function testClient(settings: ChoriaSettings): Promise<ChoriaClient> {
  return await ChoriaClient.connect(settings, { logger: silentLogger(), name: 'test' });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

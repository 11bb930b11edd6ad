// One site's complete configuration: the provisioner YAML, the Choria client configuration it
// names, and the provisioner's overrides of the latter (collective, TLS, credentials). This is the
// one recipe the CLI, the demo, the benchmarks and embedding code use, so the overrides cannot be
// forgotten on one path.
import {
  applyProvisionerOverrides,
  loadChoriaConfig,
  parseChoriaConfig,
  type ChoriaLoadOptions,
} from './choria-config.js';
import { loadProvisionerConfig, parseProvisionerConfig, type LoadOptions } from './provisioner-config.js';
import type { ChoriaSettings, ProvisionerConfig } from './types.js';

export interface Site {
  readonly config: ProvisionerConfig;
  /** the Choria client settings after applyProvisionerOverrides */
  readonly choria: ChoriaSettings;
}

export interface LoadSiteOptions extends LoadOptions, ChoriaLoadOptions {
  /**
   * the Choria client configuration file when the YAML has no `choria_config` key; without either
   * the usual Choria client lookup is used (~/.choriarc, /etc/choria/client.conf, ...)
   */
  readonly choriaConfig?: string | undefined;
}

/** Loads the provisioner YAML at `file` and its Choria client configuration. Throws ConfigError. */
export function loadSite(file: string, opts: LoadSiteOptions = {}): Site {
  const config = loadProvisionerConfig(file, opts);
  return { config, choria: loadSiteChoria(config, opts) };
}

/** The second half of loadSite, for a configuration already loaded (the CLI's validate reports each half). */
export function loadSiteChoria(config: ProvisionerConfig, opts: LoadSiteOptions = {}): ChoriaSettings {
  return applyProvisionerOverrides(loadChoriaConfig(config.choriaConfig ?? opts.choriaConfig, opts), config);
}

export interface SiteText {
  /** provisioner YAML text, and a name for it in error messages */
  readonly yaml: string;
  readonly yamlSource: string;
  /** Choria client configuration text (`key = value` lines), and a name for it */
  readonly choria: string;
  readonly choriaSource: string;
}

/** The same from texts (embedding, generated configurations). Throws ConfigError. */
export function parseSite(text: SiteText, opts: LoadOptions = {}): Site {
  const config = parseProvisionerConfig(text.yaml, text.yamlSource, opts);
  return { config, choria: applyProvisionerOverrides(parseChoriaConfig(text.choria, text.choriaSource), config) };
}

// Public API of the configuration layer.
export type {
  ChoriaSettings,
  CoordinationMode,
  FeatureFlags,
  HistoryStoreKind,
  LogLevel,
  ProvisionerConfig,
  RenewalSettings,
  SecurityProvider,
} from './types.js';
export { ConfigError, type ConfigProblem } from './errors.js';
export {
  DEFAULT_CERT_DENY_LIST,
  DURATION_FORMAT,
  LOG_LEVELS,
  describeProvisionerKeys,
  provisionerConfigSchema,
  type ObjectSchema,
  type PropertySchema,
  type ProvisionerKeyDoc,
  type RemovedKeyRule,
} from './schema.js';
export { loadProvisionerConfig, parseProvisionerConfig, type LoadOptions } from './provisioner-config.js';
export { loadSite, loadSiteChoria, parseSite, type LoadSiteOptions, type Site, type SiteText } from './site.js';
export {
  CHORIA_KEYS_READ,
  DEFAULT_SECURITY_PROVIDER,
  PROVISIONER_NATS_USER,
  PROVISIONING_COLLECTIVE,
  SECURITY_PROVIDERS,
  applyProvisionerOverrides,
  checkChoriaSettings,
  choriaConfigFile,
  defaultChoriaConfigCandidates,
  loadChoriaConfig,
  parseChoriaConfig,
  parseKeyValueLines,
  type ChoriaLoadOptions,
  type ChoriaParseOptions,
} from './choria-config.js';

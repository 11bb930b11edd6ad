import { availableParallelism } from 'node:os';
import { parseDuration } from '../util/duration.js';
import { deepFreeze } from './deep-freeze.js';
import { ConfigError, ProblemCollector, readConfigText } from './errors.js';
import { isPlainObject, matchKeys } from './key-matching.js';
import { DEFAULT_CERT_DENY_LIST, DURATION_FORMAT, provisionerConfigSchema, type PropertySchema } from './schema.js';
import { validateWithSchema } from './schema-validation.js';
import type { CoordinationMode, HistoryStoreKind, LogLevel, ProvisionerConfig } from './types.js';
import { readYamlMapping } from './yaml-text.js';

export interface LoadOptions {
  /** workers used when `workers` is absent or 0; default os.availableParallelism() */
  cpuCount?: number;
  /** receives each warning (unknown keys, ignored keys, empty token); each starts with the file name */
  onWarning?: (message: string) => void;
  /** default true; false when embedding with an in-process helper */
  requireHelper?: boolean;
}

/** The YAML after schema validation and defaults (snake_case, as written by users). */
interface ValidatedYaml {
  workers: number;
  interval: string;
  logfile?: string;
  loglevel: LogLevel;
  helper: string;
  helper_timeout: string;
  helper_mode: 'process' | 'pool';
  helper_pool_size: number;
  helper_pool_depth: number;
  helper_spawner: 'auto' | 'python3' | 'node' | 'none';
  token: string;
  lifecycle_component: string;
  choria_insecure: boolean;
  site: string;
  monitor_port: number;
  broker_port: number;
  broker_provisioning_password: string;
  cert_deny_list: string[];
  jwt_verify_cert: string;
  jwt_signing_key: string;
  jwt_signing_token: string;
  server_jwt_validity: string;
  rego_policy: string;
  leader_election: boolean;
  leader_election_key: string;
  leader_election_bucket: string;
  liveness_timeout: string;
  monitor_api_token: string;
  monitor_allowed_hosts: string[];
  monitor_tls_cert: string;
  monitor_tls_key: string;
  retry_backoff: string;
  retry_backoff_max: string;
  quarantine_after: number;
  quarantine_release_on_startup: boolean;
  identity_case_twins: boolean;
  history_store: HistoryStoreKind;
  history_bucket: string;
  history_ttl: string;
  history_api_prefix: string;
  coordination?: CoordinationMode;
  coordination_group: string;
  coordination_heartbeat: string;
  coordination_lock_retry: string;
  coordination_handover: boolean;
  streams_api_prefix: string;
  upgrades_repository: string;
  upgrades_optional: boolean;
  choria_config?: string;
  renewal_choria_config: string;
  renewal_window: number;
  renewal_margin: string;
  renewal_concurrency: number;
  renewal_failure_limit: number;
  renewal_return_timeout: string;
  features: { pki: boolean; jwt: boolean; ed25519: boolean; upgrades: boolean };
}

/**
 * Parses and validates provisioner YAML (or JSON) text. `source` names it in messages (its base
 * name starts every message). Throws {@link ConfigError} listing every problem found.
 */
export function parseProvisionerConfig(text: string, source: string, opts: LoadOptions = {}): ProvisionerConfig {
  const problems = new ProblemCollector(source);
  const warn = (message: string): void => opts.onWarning?.(`${problems.file}: ${message}`);
  const properties = provisionerConfigSchema.properties;

  const document = readYamlMapping(text, problems);
  if (document === undefined) {
    problems.throwIfAny();
    throw new ConfigError(problems.file, [{ message: `${problems.file}: could not be read` }]);
  }

  const matched = matchKeys(document, properties);
  matched.warnings.forEach(warn);
  const present = presentSettings(matched.value, properties, problems, warn);

  const { data, issues } = validateWithSchema(present, provisionerConfigSchema);
  for (const issue of issues) problems.add(issue.message, issue.key.replace(/\[\d+\]$/, ''));
  const yaml = data as unknown as ValidatedYaml;

  warnAboutIgnoredKeys(present, properties, warn);
  const durations = readDurations(yaml, properties, problems);
  const features = checkFeatures(yaml, problems);
  const coordination = coordinationMode(yaml, problems);
  checkMonitorSettings(yaml, problems);
  checkRequiredCombinations(yaml, features, opts, problems, warn);

  problems.throwIfAny();

  return deepFreeze(settingsFromYaml(source, yaml, { durations, features, coordination }, opts));
}

/**
 * The settings the file gives a value: keys the schema marks `x-removed` are reported (an error or
 * a warning, as the schema says) and left out, and so are keys without a value.
 */
function presentSettings(
  matched: Readonly<Record<string, unknown>>,
  properties: Readonly<Record<string, PropertySchema>>,
  problems: ProblemCollector,
  warn: (message: string) => void,
): Record<string, unknown> {
  const present: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(matched)) {
    const removed = properties[key]?.['x-removed'];
    if (removed !== undefined) {
      if (removed.severity === 'error') problems.add(removed.message, key);
      else warn(removed.message);
      continue;
    }
    // Like upstream (YAML -> JSON -> Go struct), a key without a value counts as absent.
    if (value === null) continue;
    present[key] = isPlainObject(value) ? withoutNulls(value) : value;
  }
  return present;
}

/** What the checks made of the validated YAML: the durations parsed, the features and the coordination mode. */
interface CheckedSettings {
  durations: Durations;
  features: ProvisionerConfig['features'];
  coordination: CoordinationMode;
}

/**
 * The configuration of a file that passed every check: the validated YAML's values under the configuration's
 * names, where an empty or zero value stands for its fallback (workers, helper_pool_size, lifecycle_component,
 * cert_deny_list, logfile, choria_config).
 */
function settingsFromYaml(
  source: string,
  yaml: ValidatedYaml,
  { durations, features, coordination }: CheckedSettings,
  opts: LoadOptions,
): ProvisionerConfig {
  const cpus = cpuCount(opts);
  const workers = yaml.workers === 0 ? cpus : yaml.workers;
  return {
    source,
    workers,
    intervalMs: durations.interval,
    logfile: yaml.logfile === undefined || yaml.logfile.trim() === '' ? undefined : yaml.logfile,
    loglevel: yaml.loglevel,
    helper: yaml.helper,
    helperTimeoutMs: durations.helperTimeout,
    helperMode: yaml.helper_mode,
    // one helper run in flight per worker: a helper that waits on a CA or a CMDB would otherwise
    // hold workers idle. The pool starts a core's worth and grows only when all are busy; a
    // CPU-bound helper is capped with helper_pool_size.
    helperPoolSize: yaml.helper_pool_size > 0 ? yaml.helper_pool_size : workers,
    helperPoolDepth: yaml.helper_pool_depth,
    helperSpawner: yaml.helper_spawner,
    token: yaml.token,
    lifecycleComponent: yaml.lifecycle_component === '' ? 'provision_mode_server' : yaml.lifecycle_component,
    choriaInsecure: yaml.choria_insecure,
    site: yaml.site,
    monitorPort: yaml.monitor_port,
    brokerProvisioningPassword: yaml.broker_provisioning_password,
    certDenyList: yaml.cert_deny_list.length === 0 ? [...DEFAULT_CERT_DENY_LIST] : yaml.cert_deny_list,
    jwtVerifyCert: yaml.jwt_verify_cert,
    jwtSigningKey: yaml.jwt_signing_key,
    jwtSigningToken: yaml.jwt_signing_token,
    serverJwtValidityMs: durations.serverJwtValidity,
    coordination,
    leaderElection: coordination === 'leader_election',
    coordinationGroup: coordinationGroup(yaml),
    coordinationHeartbeatMs: durations.coordinationHeartbeat,
    coordinationLockRetryMs: durations.coordinationLockRetry,
    coordinationHandover: yaml.coordination_handover,
    livenessTimeoutMs: durations.livenessTimeout,
    monitorApiToken: yaml.monitor_api_token,
    monitorAllowedHosts: yaml.monitor_allowed_hosts,
    monitorTlsCert: yaml.monitor_tls_cert,
    monitorTlsKey: yaml.monitor_tls_key,
    retryBackoffMs: durations.retryBackoff,
    retryBackoffMaxMs: durations.retryBackoffMax,
    quarantineAfter: yaml.quarantine_after,
    quarantineReleaseOnStartup: yaml.quarantine_release_on_startup,
    identityCaseTwins: yaml.identity_case_twins,
    historyStore: yaml.history_store,
    historyBucket: yaml.history_bucket,
    historyTtlMs: durations.historyTtl,
    historyApiPrefix: yaml.history_api_prefix,
    leaderElectionKey: yaml.leader_election_key,
    leaderElectionBucket: yaml.leader_election_bucket,
    streamsApiPrefix: yaml.streams_api_prefix,
    upgradesRepository: yaml.upgrades_repository,
    upgradesOptional: yaml.upgrades_optional,
    features,
    choriaConfig: yaml.choria_config === undefined || yaml.choria_config.trim() === '' ? undefined : yaml.choria_config,
    renewal:
      yaml.renewal_choria_config.trim() === ''
        ? undefined
        : {
            choriaConfig: yaml.renewal_choria_config,
            windowPercent: yaml.renewal_window,
            marginMs: durations.renewalMargin,
            concurrency: yaml.renewal_concurrency,
            failureLimit: yaml.renewal_failure_limit,
            returnTimeoutMs: durations.renewalReturnTimeout,
          },
  };
}

/** Reads and parses the provisioner configuration file. Throws {@link ConfigError}. */
export function loadProvisionerConfig(file: string, opts: LoadOptions = {}): ProvisionerConfig {
  const text = readConfigText(file);
  return parseProvisionerConfig(text, file, opts);
}

/** `coordination`, or what the upstream boolean `leader_election` asks for; the two must agree. */
function coordinationMode(yaml: ValidatedYaml, problems: ProblemCollector): CoordinationMode {
  const asked = yaml.coordination;
  if (asked === undefined) return yaml.leader_election ? 'leader_election' : 'none';
  if (yaml.leader_election && asked !== 'leader_election') {
    problems.add(
      `coordination ${JSON.stringify(asked)} contradicts leader_election: true; ` +
        `remove leader_election or set coordination: leader_election`,
      'coordination',
    );
  }
  return asked;
}

/** The subject token the instances of one active/active site share. */
function coordinationGroup(yaml: ValidatedYaml): string {
  if (yaml.coordination_group !== '') return yaml.coordination_group;
  const fromSite = yaml.site.replace(/[^-\w]/g, '_');
  return fromSite === '' ? 'provisioner' : fromSite;
}

/** The monitor port's own settings: host names without ports, and a TLS certificate only with its key. */
function checkMonitorSettings(yaml: ValidatedYaml, problems: ProblemCollector): void {
  for (const name of yaml.monitor_allowed_hosts) {
    if (!/^[A-Za-z0-9_.-]+$/.test(name))
      problems.add(
        `monitor_allowed_hosts: ${JSON.stringify(name)} must be a host name without port ` +
          `(letters, digits, ".", "-", "_")`,
        'monitor_allowed_hosts',
      );
  }
  if ((yaml.monitor_tls_cert === '') !== (yaml.monitor_tls_key === '')) {
    problems.add(
      'monitor_tls_cert and monitor_tls_key go together: set both for HTTPS on the monitor port, or neither',
      yaml.monitor_tls_cert === '' ? 'monitor_tls_cert' : 'monitor_tls_key',
    );
  }
}

function cpuCount(opts: LoadOptions): number {
  const n = opts.cpuCount ?? availableParallelism();
  return Number.isInteger(n) && n >= 1 ? n : 1;
}

function withoutNulls(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null));
}

function warnAboutIgnoredKeys(
  present: Readonly<Record<string, unknown>>,
  properties: Readonly<Record<string, PropertySchema>>,
  warn: (message: string) => void,
): void {
  for (const [key, prop] of Object.entries(properties)) {
    const message = prop['x-ignored'];
    if (message === undefined || !(key in present)) continue;
    const value = present[key];
    if (value !== prop.default && value !== '' && value !== 0) warn(message);
  }
}

interface Durations {
  interval: number;
  helperTimeout: number;
  serverJwtValidity: number;
  coordinationHeartbeat: number;
  coordinationLockRetry: number;
  livenessTimeout: number;
  retryBackoff: number;
  retryBackoffMax: number;
  historyTtl: number;
  renewalMargin: number;
  renewalReturnTimeout: number;
}

function readDurations(
  yaml: ValidatedYaml,
  properties: Readonly<Record<string, PropertySchema>>,
  problems: ProblemCollector,
): Durations {
  const read = (
    key:
      | 'interval'
      | 'helper_timeout'
      | 'server_jwt_validity'
      | 'coordination_heartbeat'
      | 'coordination_lock_retry'
      | 'liveness_timeout'
      | 'retry_backoff'
      | 'retry_backoff_max'
      | 'history_ttl'
      | 'renewal_margin'
      | 'renewal_return_timeout',
  ): number => {
    const prop = properties[key];
    const text = yaml[key];
    if (prop?.format !== DURATION_FORMAT || problems.has(key)) return parseDuration(String(prop?.default ?? ''));
    const ms = parseDuration(text);
    const min = prop['x-min-duration'];
    const max = prop['x-max-duration'];
    if (min !== undefined && ms < parseDuration(min)) {
      problems.add(`${key} ${JSON.stringify(text)} is below the minimum of ${min}`, key);
    } else if (max !== undefined && ms > parseDuration(max)) {
      problems.add(`${key} ${JSON.stringify(text)} is above the maximum of ${max}`, key);
    }
    return ms;
  };

  const interval = read('interval');
  const helperTimeout = read('helper_timeout');
  let serverJwtValidity: number;
  if (yaml.server_jwt_validity.trim() === '') {
    serverJwtValidity = parseDuration(String(properties['server_jwt_validity']?.default));
  } else {
    serverJwtValidity = read('server_jwt_validity');
    if (serverJwtValidity <= 0 && !problems.has('server_jwt_validity')) {
      problems.add(
        `server_jwt_validity ${JSON.stringify(yaml.server_jwt_validity)} must be greater than zero ` +
          `(server JWTs would be born expired)`,
        'server_jwt_validity',
      );
    }
  }
  return {
    interval,
    helperTimeout,
    serverJwtValidity,
    coordinationHeartbeat: read('coordination_heartbeat'),
    coordinationLockRetry: read('coordination_lock_retry'),
    livenessTimeout: read('liveness_timeout'),
    retryBackoff: read('retry_backoff'),
    retryBackoffMax: read('retry_backoff_max'),
    historyTtl: read('history_ttl'),
    renewalMargin: read('renewal_margin'),
    renewalReturnTimeout: read('renewal_return_timeout'),
  };
}

function checkFeatures(yaml: ValidatedYaml, problems: ProblemCollector): ProvisionerConfig['features'] {
  const { pki, ed25519, upgrades } = yaml.features;
  if (pki && ed25519) problems.add('can only enable one of pki or ed25519 features', 'features');
  // ed25519 needs the node's provisioning.jwt (upstream forces jwt on)
  return { pki, jwt: yaml.features.jwt || ed25519, ed25519, upgrades };
}

function checkRequiredCombinations(
  yaml: ValidatedYaml,
  features: ProvisionerConfig['features'],
  opts: LoadOptions,
  problems: ProblemCollector,
  warn: (message: string) => void,
): void {
  type TextKey = 'helper' | 'token' | 'jwt_verify_cert' | 'jwt_signing_key' | 'upgrades_repository';
  const missing = (key: TextKey): boolean => !problems.has(key) && yaml[key].trim() === '';

  if (opts.requireHelper !== false && missing('helper')) {
    problems.add('helper is required: the command run for every node to decide its configuration', 'helper');
  }
  if (features.jwt && missing('jwt_verify_cert')) {
    if (features.ed25519) {
      problems.add(
        'features.ed25519 requires jwt_verify_cert ' +
          "(the Organization Issuer public key that verifies the nodes' provisioning.jwt)",
        'jwt_verify_cert',
      );
    } else {
      problems.add(
        "features.jwt requires jwt_verify_cert (the key that verifies the nodes' provisioning.jwt)",
        'jwt_verify_cert',
      );
    }
  }
  if (features.ed25519 && missing('jwt_signing_key')) {
    problems.add('features.ed25519 requires jwt_signing_key (the key that signs the server JWTs)', 'jwt_signing_key');
  }
  if (features.upgrades && !yaml.upgrades_optional && missing('upgrades_repository')) {
    problems.add(
      'features.upgrades requires upgrades_repository (or set upgrades_optional: true)',
      'upgrades_repository',
    );
  }
  if (!missing('upgrades_repository') && !problems.has('upgrades_repository') && !isHttpUrl(yaml.upgrades_repository)) {
    problems.add(
      `upgrades_repository ${JSON.stringify(yaml.upgrades_repository)} is not an http or https URL`,
      'upgrades_repository',
    );
  }

  if (missing('token')) {
    warn('token is empty: servers whose provisioning JWT carries a token (the usual case) refuse every request');
  }
  if (yaml.choria_insecure && yaml.broker_provisioning_password !== '') {
    warn(
      'choria_insecure is true while broker_provisioning_password is set: ' +
        'a Choria Broker only accepts the provisioner user over verified TLS',
    );
  }
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text.trim());
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

/**
 * The values of the settings the schema marks `x-secret` (the provisioning token, the broker
 * password, the monitor port's API token): the redactor blanks them wherever a node or a helper
 * echoes them.
 */
export function configSecrets(
  cfg: Pick<ProvisionerConfig, 'token' | 'brokerProvisioningPassword' | 'monitorApiToken'>,
): string[] {
  return [cfg.token, cfg.brokerProvisioningPassword, cfg.monitorApiToken].filter((v) => v !== '');
}

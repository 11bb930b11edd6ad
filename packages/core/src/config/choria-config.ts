// The Choria client configuration (`key = value`): how the provisioner reaches
// and authenticates to the broker. Only the keys below are interpreted; every pair is kept in
// `raw` because Choria configurations routinely carry hundreds of keys meant for other programs.

import { existsSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { deepFreeze } from './deep-freeze.js';
import { ConfigError, ProblemCollector, readConfigText, sourceLabel } from './errors.js';
import { LOG_LEVELS } from './schema.js';
import type { ChoriaSettings, LogLevel, ProvisionerConfig, SecurityProvider } from './types.js';

export interface ChoriaParseOptions {
  /** identity when the file has none; default os.hostname() */
  hostname?: string;
  /** home directory for `~` in paths and the default Puppet ssldir; default os.homedir() */
  homeDir?: string;
  /** whether the process runs as root (picks the default Puppet ssldir); default from process.getuid() */
  isRoot?: boolean;
  /** environment consulted for MCOLLECTIVE_CERTNAME; default process.env */
  env?: Readonly<Record<string, string | undefined>>;
}

export interface ChoriaLoadOptions extends ChoriaParseOptions {
  /** file existence test used by the default lookup; default fs.existsSync */
  exists?: (path: string) => boolean;
}

/** Every Choria client key this module interprets (the documentation lists exactly these). */
export const CHORIA_KEYS_READ = [
  'identity',
  'plugin.choria.middleware_hosts',
  'collectives',
  'main_collective',
  'plugin.security.provider',
  'plugin.security.file.certificate',
  'plugin.security.file.key',
  'plugin.security.file.ca',
  'plugin.choria.ssldir',
  'plugin.security.certname_override',
  'plugin.security.choria.token_file',
  'plugin.security.choria.seed_file',
  'plugin.security.choria.certificate',
  'plugin.security.choria.key',
  'plugin.security.choria.ca',
  'plugin.nats.user',
  'plugin.nats.pass',
  'ttl',
  'discovery_timeout',
  'loglevel',
  'logfile',
] as const;

export const SECURITY_PROVIDERS: readonly SecurityProvider[] = ['file', 'puppet', 'choria'];

/** go-choria's default (`plugin.security.provider` defaults to puppet). */
export const DEFAULT_SECURITY_PROVIDER: SecurityProvider = 'puppet';

/** The collective the provisioner and provisioning-mode servers share. */
export const PROVISIONING_COLLECTIVE = 'provisioning';

/** The NATS user the broker maps into its provisioning account. */
export const PROVISIONER_NATS_USER = 'provisioner';

/** Where Choria clients look for their configuration, in order (go-choria UserConfig()). */
export function defaultChoriaConfigCandidates(homeDir: string | undefined): readonly string[] {
  const home =
    homeDir === undefined || homeDir === '' ? [] : [join(homeDir, '.choriarc'), join(homeDir, '.mcollective')];
  return [
    ...home,
    '/etc/choria/client.conf',
    '/usr/local/etc/choria/client.conf',
    '/etc/puppetlabs/mcollective/client.cfg',
  ];
}

/** Splits `key = value` lines; later keys win, comment and blank lines and lines without a value are skipped. */
export function parseKeyValueLines(text: string): Record<string, string> {
  const raw: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) continue;
    const key = trimmed.slice(0, eq).trim();
    const value = trimmed.slice(eq + 1).trim();
    // Choria ignores `key =` with nothing after it, leaving any earlier value in place.
    if (key === '' || value === '') continue;
    raw[key] = value;
  }
  return raw;
}

/** Parses Choria client configuration text. Throws {@link ConfigError} listing every problem. */
export function parseChoriaConfig(text: string, source: string, opts: ChoriaParseOptions = {}): ChoriaSettings {
  const problems = new ProblemCollector(source);
  const raw = parseKeyValueLines(text);
  const home = opts.homeDir ?? homedir();
  const env = opts.env ?? process.env;
  const get = (key: (typeof CHORIA_KEYS_READ)[number]): string | undefined => raw[key];
  const path = (key: (typeof CHORIA_KEYS_READ)[number]): string | undefined => expandHome(get(key), home);

  const identity = get('identity') ?? opts.hostname ?? hostname();

  const providerText = get('plugin.security.provider') ?? DEFAULT_SECURITY_PROVIDER;
  // go-choria's default: mcollective, or choria with the choria security provider
  const collectives = splitList(get('collectives'));
  if (collectives.length === 0) collectives.push(providerText === 'choria' ? 'choria' : 'mcollective');
  const mainCollective = get('main_collective') ?? collectives[0] ?? 'mcollective';

  const securityProvider = SECURITY_PROVIDERS.find((p) => p === providerText);
  if (securityProvider === undefined) {
    problems.add(
      `plugin.security.provider ${JSON.stringify(providerText)} is not supported; use ${SECURITY_PROVIDERS.join(', ')}`,
      'plugin.security.provider',
    );
  }

  // go-choria: an explicit override, then MCOLLECTIVE_CERTNAME, then the identity.
  const certname = get('plugin.security.certname_override') ?? nonEmpty(env['MCOLLECTIVE_CERTNAME']) ?? identity;

  let certificateFile: string | undefined;
  let keyFile: string | undefined;
  let caFile: string | undefined;
  switch (securityProvider) {
    case 'puppet': {
      const ssldir = path('plugin.choria.ssldir') ?? defaultPuppetSslDir(opts.isRoot ?? isRootProcess(), home);
      certificateFile = join(ssldir, 'certs', `${certname}.pem`);
      keyFile = join(ssldir, 'private_keys', `${certname}.pem`);
      caFile = join(ssldir, 'certs', 'ca.pem');
      break;
    }
    case 'choria':
      certificateFile = path('plugin.security.choria.certificate');
      keyFile = path('plugin.security.choria.key');
      caFile = path('plugin.security.choria.ca');
      break;
    default:
      certificateFile = path('plugin.security.file.certificate');
      keyFile = path('plugin.security.file.key');
      caFile = path('plugin.security.file.ca');
  }

  const ttl = positiveInteger(get('ttl'), 60, 'ttl', problems);
  const discoveryTimeout = positiveInteger(get('discovery_timeout'), 2, 'discovery_timeout', problems);

  problems.throwIfAny();

  return deepFreeze({
    source,
    identity,
    middlewareHosts: splitList(get('plugin.choria.middleware_hosts')).map(withNatsScheme),
    collectives,
    mainCollective,
    securityProvider: securityProvider ?? DEFAULT_SECURITY_PROVIDER,
    protocolSecure: true,
    tls: true,
    certificateFile,
    keyFile,
    caFile,
    tokenFile: path('plugin.security.choria.token_file'),
    seedFile: path('plugin.security.choria.seed_file'),
    certname,
    natsUser: get('plugin.nats.user'),
    natsPassword: get('plugin.nats.pass'),
    ttl,
    discoveryTimeout,
    loglevel: LOG_LEVELS.find((l): l is LogLevel => l === get('loglevel')),
    logfile: path('logfile'),
    raw,
  });
}

/**
 * Loads the Choria client configuration: `file` when given, else the first existing file of the
 * usual Choria client lookup. Throws {@link ConfigError}.
 */
export function loadChoriaConfig(file?: string, opts: ChoriaLoadOptions = {}): ChoriaSettings {
  let chosen = file;
  if (chosen === undefined) {
    const exists = opts.exists ?? existsSync;
    const candidates = defaultChoriaConfigCandidates(opts.homeDir ?? homedir());
    chosen = candidates.find((candidate) => exists(candidate));
    if (chosen === undefined) {
      const label = 'Choria client configuration';
      throw new ConfigError(label, [
        {
          message:
            `${label}: none found; looked for ${candidates.join(', ')}; ` +
            `give one with --choria-config or the choria_config key`,
        },
      ]);
    }
  }

  const text = readConfigText(chosen);
  return parseChoriaConfig(text, chosen, opts);
}

/**
 * Which Choria client configuration file to load: the provisioner YAML's `choria_config` wins over
 * the `--choria-config` flag; undefined means the default lookup.
 */
export function choriaConfigFile(config: ProvisionerConfig, flag?: string): string | undefined {
  return config.choriaConfig ?? (flag === undefined || flag === '' ? undefined : flag);
}

/**
 * What `choria_insecure` means for every connection of a site (provisioning and renewals): plain
 * TCP, unsigned requests, the file provider without certificates. Unchanged when false.
 */
export function applyChoriaInsecure(settings: ChoriaSettings, insecure: boolean): ChoriaSettings {
  if (!insecure) return settings;
  return deepFreeze({ ...settings, securityProvider: 'file', protocolSecure: false, tls: false });
}

/** The settings the provisioner forces on its Choria client. */
export function applyProvisionerOverrides(settings: ChoriaSettings, config: ProvisionerConfig): ChoriaSettings {
  const password = config.brokerProvisioningPassword;
  return deepFreeze({
    ...applyChoriaInsecure(settings, config.choriaInsecure),
    collectives: [PROVISIONING_COLLECTIVE],
    mainCollective: PROVISIONING_COLLECTIVE,
    natsUser: password === '' ? settings.natsUser : PROVISIONER_NATS_USER,
    natsPassword: password === '' ? settings.natsPassword : password,
    loglevel: config.loglevel,
    logfile: config.logfile,
  });
}

/**
 * Problems that would stop the Choria client from connecting with these settings (call it after
 * {@link applyProvisionerOverrides}). Each message starts with the file name. Empty when usable.
 */
export function checkChoriaSettings(settings: ChoriaSettings): readonly string[] {
  const label = sourceLabel(settings.source);
  const out: string[] = [];
  if (settings.middlewareHosts.length === 0) {
    out.push(
      `${label}: plugin.choria.middleware_hosts is not set; give the broker address(es), e.g. ` +
        `nats://broker.example.net:4222 (DNS SRV lookup is not supported)`,
    );
  }
  // The puppet provider always has derived paths; only the file provider can lack them.
  if (settings.securityProvider === 'file' && (settings.tls || settings.protocolSecure)) {
    const files: [string, string | undefined][] = [
      ['certificate', settings.certificateFile],
      ['key', settings.keyFile],
      ['ca', settings.caFile],
    ];
    for (const [name, value] of files) {
      if (value === undefined)
        out.push(`${label}: the file security provider needs a ${name} (plugin.security.file.${name})`);
    }
  }
  if (settings.securityProvider === 'choria' && settings.protocolSecure) {
    if (settings.tokenFile === undefined)
      out.push(`${label}: the choria security provider needs plugin.security.choria.token_file`);
    if (settings.seedFile === undefined)
      out.push(`${label}: the choria security provider needs plugin.security.choria.seed_file`);
  }
  return out;
}

function splitList(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** Choria accepts `host:port`; the NATS client needs a URL. */
function withNatsScheme(host: string): string {
  return host.includes('://') ? host : `nats://${host}`;
}

function expandHome(value: string | undefined, home: string): string | undefined {
  if (value === undefined) return undefined;
  if (value === '~') return home;
  if (value.startsWith('~/')) return join(home, value.slice(2));
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

function positiveInteger(text: string | undefined, fallback: number, key: string, problems: ProblemCollector): number {
  if (text === undefined) return fallback;
  if (/^\+?\d+$/.test(text)) {
    const n = Number(text);
    if (n > 0 && Number.isSafeInteger(n)) return n;
  }
  problems.add(`${key} ${JSON.stringify(text)} must be a whole number of seconds greater than 0`, key);
  return fallback;
}

/** Puppet's own default ssldir (go-choria asks Puppet; we do not run it). */
function defaultPuppetSslDir(isRoot: boolean, home: string): string {
  return isRoot ? '/etc/puppetlabs/puppet/ssl' : join(home, '.puppetlabs', 'etc', 'puppet', 'ssl');
}

function isRootProcess(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/errors.js';
import { configSecrets, parseProvisionerConfig, type LoadOptions } from '../../src/config/provisioner-config.js';
import { provisionerConfigSchema } from '../../src/config/schema.js';
import type { ProvisionerConfig } from '../../src/config/types.js';

const BASE = 'helper: /usr/bin/helper\ntoken: s3cret\n';

interface Parsed {
  config: ProvisionerConfig;
  warnings: string[];
}

function parse(text: string, opts: LoadOptions = {}): Parsed {
  const warnings: string[] = [];
  const config = parseProvisionerConfig(text, '/etc/choria-provisioner/provisioner.yaml', {
    cpuCount: 3,
    onWarning: (m) => warnings.push(m),
    ...opts,
  });
  return { config, warnings };
}

function failure(text: string, opts: LoadOptions = {}): { error: ConfigError; warnings: string[] } {
  const warnings: string[] = [];
  try {
    parseProvisionerConfig(text, '/etc/choria-provisioner/provisioner.yaml', {
      cpuCount: 3,
      onWarning: (m) => warnings.push(m),
      ...opts,
    });
  } catch (err) {
    if (err instanceof ConfigError) return { error: err, warnings };
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('defaults', () => {
  it('sizes the helper pool at one process per worker (a helper run in flight each), unless given', () => {
    expect(parse(`${BASE}workers: 2\n`).config.helperPoolSize).toBe(2);
    expect(parse(`${BASE}workers: 40\n`).config.helperPoolSize).toBe(40);
    expect(parse(`${BASE}workers: 40\nhelper_pool_size: 8\nhelper_pool_depth: 16\n`).config).toMatchObject({
      helperPoolSize: 8,
      helperPoolDepth: 16,
    });
    expect(parse(`${BASE}helper_spawner: node\n`).config).toMatchObject({ helperSpawner: 'node' });
  });

  it('fills every key with its documented default', () => {
    const { config, warnings } = parse(BASE);
    expect(config).toEqual({
      source: '/etc/choria-provisioner/provisioner.yaml',
      workers: 3,
      intervalMs: 60_000,
      logfile: undefined,
      loglevel: 'info',
      helper: '/usr/bin/helper',
      helperTimeoutMs: 10_000,
      historyApiPrefix: '$JS.API',
      historyBucket: 'CHORIA_PROVISIONER_HISTORY',
      historyStore: 'kv',
      historyTtlMs: 604_800_000,
      helperMode: 'process',
      // one per worker (workers defaults to the CPU count, 3 here)
      helperPoolSize: 3,
      helperPoolDepth: 1,
      helperSpawner: 'node',
      token: 's3cret',
      lifecycleComponent: 'provision_mode_server',
      choriaInsecure: false,
      site: '',
      monitorPort: 0,
      brokerProvisioningPassword: '',
      certDenyList: ['\\.privileged.mcollective$', '\\.privileged.choria$', '\\.mcollective$', '\\.choria$'],
      jwtVerifyCert: '',
      jwtSigningKey: '',
      jwtSigningToken: '',
      serverJwtValidityMs: 365 * 24 * 3_600_000,
      coordination: 'none',
      leaderElection: false,
      coordinationGroup: 'provisioner',
      coordinationHeartbeatMs: 2000,
      coordinationLockRetryMs: 130_000,
      coordinationHandover: true,
      livenessTimeoutMs: 2000,
      monitorApiToken: '',
      monitorAllowedHosts: [],
      monitorTlsCert: '',
      monitorTlsKey: '',
      retryBackoffMs: 0,
      retryBackoffMaxMs: 1_800_000,
      quarantineAfter: 0,
      quarantineReleaseOnStartup: true,
      identityCaseTwins: false,
      leaderElectionKey: 'provisioner',
      leaderElectionBucket: 'CHORIA_LEADER_ELECTION',
      streamsApiPrefix: 'choria.streams',
      upgradesRepository: '',
      upgradesOptional: false,
      features: { pki: false, jwt: false, ed25519: false, upgrades: false },
      choriaConfig: undefined,
    });
    expect(warnings).toEqual([]);
  });

  it('selects the coordination mode, keeping leader_election configs as they were', () => {
    expect(parse(`${BASE}leader_election: true\n`).config).toMatchObject({
      coordination: 'leader_election',
      leaderElection: true,
    });
    expect(parse(`${BASE}coordination: leader_election\n`).config).toMatchObject({
      coordination: 'leader_election',
      leaderElection: true,
    });
    expect(parse(`${BASE}leader_election: true\ncoordination: leader_election\n`).config.coordination).toBe(
      'leader_election',
    );
    const aa = parse(
      `${BASE}site: lon.1 east\ncoordination: active_active\ncoordination_heartbeat: 500ms\ncoordination_lock_retry: 3m\n`,
    ).config;
    expect(aa).toMatchObject({
      coordination: 'active_active',
      leaderElection: false,
      coordinationGroup: 'lon_1_east',
      coordinationHeartbeatMs: 500,
      coordinationLockRetryMs: 180_000,
    });
    expect(parse(`${BASE}coordination: active_active\ncoordination_group: fleet-a\n`).config.coordinationGroup).toBe(
      'fleet-a',
    );
  });

  it('wants monitor_tls_cert and monitor_tls_key together', () => {
    expect(() => parse(`${BASE}monitor_tls_cert: /etc/p/monitor.pem\n`)).toThrow(
      /monitor_tls_cert and monitor_tls_key go together/,
    );
    expect(
      parse(`${BASE}monitor_tls_cert: /etc/p/monitor.pem\nmonitor_tls_key: /etc/p/monitor-key.pem\n`).config,
    ).toMatchObject({ monitorTlsCert: '/etc/p/monitor.pem', monitorTlsKey: '/etc/p/monitor-key.pem' });
  });

  it('refuses a contradictory or malformed coordination setting, naming the key', () => {
    expect(() => parse(`${BASE}leader_election: true\ncoordination: active_active\n`)).toThrow(
      /coordination "active_active" contradicts leader_election: true; remove leader_election or set coordination: leader_election/,
    );
    expect(() => parse(`${BASE}coordination: both\n`)).toThrow(/coordination/);
    expect(() => parse(`${BASE}coordination_group: a.b\n`)).toThrow(/coordination_group.*letters, digits, - and _/);
    expect(() => parse(`${BASE}coordination_heartbeat: 10ms\n`)).toThrow(
      /coordination_heartbeat "10ms" is below the minimum of 100ms/,
    );
    expect(() => parse(`${BASE}coordination_lock_retry: soon\n`)).toThrow(/coordination_lock_retry/);
  });

  it('reads the node history settings and refuses bad ones, naming the key', () => {
    expect(
      parse(
        `${BASE}history_store: memory\nhistory_bucket: FLEET_HISTORY\nhistory_ttl: 720h\nhistory_api_prefix: js.site1\n`,
      ).config,
    ).toMatchObject({
      historyStore: 'memory',
      historyBucket: 'FLEET_HISTORY',
      historyTtlMs: 720 * 3_600_000,
      historyApiPrefix: 'js.site1',
    });
    expect(() => parse(`${BASE}history_store: redis\n`)).toThrow(/history_store/);
    expect(() => parse(`${BASE}history_bucket: a.b\n`)).toThrow(/history_bucket.*letters, digits, - and _/);
    expect(() => parse(`${BASE}history_ttl: 30s\n`)).toThrow(/history_ttl "30s" is below the minimum of 1m/);
    expect(() => parse(`${BASE}history_ttl: 9000h\n`)).toThrow(/history_ttl "9000h" is above the maximum of 8760h/);
    expect(() => parse(`${BASE}history_api_prefix: js.*\n`)).toThrow(/history_api_prefix.*NATS subject prefix/);
  });

  it('returns a deeply frozen object', () => {
    const { config } = parse(BASE);
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.features)).toBe(true);
    expect(Object.isFrozen(config.certDenyList)).toBe(true);
  });

  it('uses the CPU count for workers absent or 0, and os.availableParallelism() without an override', () => {
    expect(parse(`${BASE}workers: 0\n`).config.workers).toBe(3);
    expect(parse(`${BASE}workers: 7\n`).config.workers).toBe(7);
    const warnings: string[] = [];
    const config = parseProvisionerConfig(BASE, 'p.yaml', { onWarning: (m) => warnings.push(m) });
    expect(config.workers).toBeGreaterThanOrEqual(1);
  });

  it('treats keys without a value as absent', () => {
    const { config } = parse(`${BASE}interval:\nworkers: ~\nfeatures:\n  pki:\n`);
    expect(config.intervalMs).toBe(60_000);
    expect(config.workers).toBe(3);
    expect(config.features.pki).toBe(false);
  });

  it('uses the default deny list for an empty list and keeps a custom one', () => {
    expect(parse(`${BASE}cert_deny_list: []\n`).config.certDenyList).toHaveLength(4);
    expect(parse(`${BASE}cert_deny_list: ['\\.admin$']\n`).config.certDenyList).toEqual(['\\.admin$']);
  });

  it('uses the defaults for empty lifecycle_component, server_jwt_validity, logfile and choria_config', () => {
    const { config } = parse(
      `${BASE}lifecycle_component: ''\nserver_jwt_validity: ''\nlogfile: ''\nchoria_config: ''\n`,
    );
    expect(config.lifecycleComponent).toBe('provision_mode_server');
    expect(config.serverJwtValidityMs).toBe(365 * 24 * 3_600_000);
    expect(config.logfile).toBeUndefined();
    expect(config.choriaConfig).toBeUndefined();
  });
});

describe('values', () => {
  it('reads every key', () => {
    const { config, warnings } = parse(`
workers: 8
interval: 5m
logfile: /var/log/choria-provisioner.log
loglevel: debug
helper: "/usr/bin/ruby /etc/choria-provisioner/helper.rb --site lon"
helper_timeout: 30s
token: 9fe1c0b1a6d84f2e8c3d
lifecycle_component: custom_component
choria_insecure: false
site: lon1
monitor_port: 8080
broker_provisioning_password: provS3cret
cert_deny_list:
  - '\\.mcollective$'
jwt_verify_cert: /etc/choria-provisioner/jwt-signer.pem
jwt_signing_key: /etc/choria-provisioner/signer.seed
jwt_signing_token: /etc/choria-provisioner/signer.jwt
server_jwt_validity: 90d
leader_election: true
leader_election_key: provisioner.lon1
leader_election_bucket: MY_ELECTION
streams_api_prefix: choria.streams.lon
upgrades_repository: https://repo.example.net/choria
upgrades_optional: true
choria_config: /etc/choria-provisioner/choria.cfg
features:
  jwt: true
  pki: true
  upgrades: true
`);
    expect(warnings).toEqual([]);
    expect(config).toMatchObject({
      workers: 8,
      intervalMs: 300_000,
      logfile: '/var/log/choria-provisioner.log',
      loglevel: 'debug',
      helper: '/usr/bin/ruby /etc/choria-provisioner/helper.rb --site lon',
      helperTimeoutMs: 30_000,
      token: '9fe1c0b1a6d84f2e8c3d',
      lifecycleComponent: 'custom_component',
      site: 'lon1',
      monitorPort: 8080,
      brokerProvisioningPassword: 'provS3cret',
      certDenyList: ['\\.mcollective$'],
      jwtVerifyCert: '/etc/choria-provisioner/jwt-signer.pem',
      jwtSigningKey: '/etc/choria-provisioner/signer.seed',
      jwtSigningToken: '/etc/choria-provisioner/signer.jwt',
      serverJwtValidityMs: 90 * 24 * 3_600_000,
      coordination: 'leader_election',
      leaderElection: true,
      leaderElectionKey: 'provisioner.lon1',
      leaderElectionBucket: 'MY_ELECTION',
      streamsApiPrefix: 'choria.streams.lon',
      upgradesRepository: 'https://repo.example.net/choria',
      upgradesOptional: true,
      choriaConfig: '/etc/choria-provisioner/choria.cfg',
      features: { jwt: true, pki: true, ed25519: false, upgrades: true },
    });
  });

  it('accepts JSON', () => {
    const { config } = parse(
      '{\n\t"helper": "/bin/h",\n\t"token": "t",\n\t"workers": 2,\n\t"features": {"jwt": false}\n}',
    );
    expect(config.workers).toBe(2);
    expect(config.helper).toBe('/bin/h');
  });

  it('matches keys case-insensitively, nested ones too', () => {
    const { config, warnings } = parse(
      'Helper: /bin/h\nTOKEN: t\nWorkers: 6\nFeatures:\n  PKI: true\n  Jwt: true\nJWT_Verify_Cert: /k.pem\n',
    );
    expect(config.workers).toBe(6);
    expect(config.helper).toBe('/bin/h');
    expect(config.features).toEqual({ pki: true, jwt: true, ed25519: false, upgrades: false });
    expect(config.jwtVerifyCert).toBe('/k.pem');
    expect(warnings).toEqual([]);
  });

  it('warns when one key is given twice in different case, and uses the later one', () => {
    const { config, warnings } = parse(`${BASE}workers: 2\nWORKERS: 5\n`);
    expect(config.workers).toBe(5);
    expect(warnings).toEqual([
      'provisioner.yaml: workers is given twice (as "workers" and "WORKERS"); the later one is used',
    ]);
  });

  it('reads YAML 1.1 booleans like upstream (yes/no/on/off)', () => {
    const { config } = parse(`${BASE}choria_insecure: yes\nleader_election: on\nfeatures: {jwt: no, pki: Yes}\n`);
    expect(config.choriaInsecure).toBe(true);
    expect(config.leaderElection).toBe(true);
    expect(config.features.pki).toBe(true);
    expect(config.features.jwt).toBe(false);
  });

  it('keeps time-like and date-like values as strings', () => {
    const { config } = parse('helper: /bin/h\ntoken: 12:30\nsite: 2024-01-01\n');
    expect(config.token).toBe('12:30');
    expect(config.site).toBe('2024-01-01');
  });

  it('keeps the special logfile names', () => {
    for (const name of ['stdout', 'stderr', 'discard'])
      expect(parse(`${BASE}logfile: ${name}\n`).config.logfile).toBe(name);
  });

  it('accepts every log level', () => {
    for (const level of ['debug', 'info', 'warn', 'error', 'fatal']) {
      expect(parse(`${BASE}loglevel: ${level}\n`).config.loglevel).toBe(level);
    }
  });

  it('accepts the Choria duration syntax', () => {
    expect(parse(`${BASE}interval: 1h30m\n`).config.intervalMs).toBe(5_400_000);
    expect(parse(`${BASE}interval: 1d\n`).config.intervalMs).toBe(86_400_000);
    expect(parse(`${BASE}interval: 60s\n`).config.intervalMs).toBe(60_000);
    expect(parse(`${BASE}server_jwt_validity: 2w\n`).config.serverJwtValidityMs).toBe(14 * 24 * 3_600_000);
    expect(parse(`${BASE}server_jwt_validity: 10s\n`).config.serverJwtValidityMs).toBe(10_000);
  });

  it('forces jwt on with ed25519', () => {
    const { config } = parse(`${BASE}jwt_verify_cert: abcd\njwt_signing_key: /s.seed\nfeatures: {ed25519: true}\n`);
    expect(config.features).toEqual({ pki: false, jwt: true, ed25519: true, upgrades: false });
  });

  it('accepts monitor_port bounds', () => {
    expect(parse(`${BASE}monitor_port: 65535\n`).config.monitorPort).toBe(65535);
    expect(parse(`${BASE}monitor_port: 0\n`).config.monitorPort).toBe(0);
  });

  it('does not require helper when embedding with an in-process helper', () => {
    expect(parse('token: t\n', { requireHelper: false }).config.helper).toBe('');
  });

  it('allows upgrades without a repository when upgrades are optional', () => {
    expect(parse(`${BASE}upgrades_optional: true\nfeatures: {upgrades: true}\n`).config.features.upgrades).toBe(true);
  });
});

describe('rejections', () => {
  const expectOnly = (text: string, message: string, key?: string, opts: LoadOptions = {}): ConfigError => {
    const { error } = failure(text, opts);
    expect(error.reasons).toEqual([message]);
    expect(error.message).toBe(message);
    expect(error.file).toBe('provisioner.yaml');
    expect(error.key).toBe(key);
    return error;
  };

  it('reports YAML syntax errors with line and column', () => {
    const { error } = failure('helper: /bin/h\ntoken: t\nsite: a: b\n');
    expect(error.reasons).toEqual([
      'provisioner.yaml: YAML syntax error at line 3, column 7: Nested mappings are not allowed in compact mappings',
    ]);
    const eof = failure('helper: /bin/h\nfeatures: [pki\n').error;
    expect(eof.reasons[0]).toMatch(/^provisioner\.yaml: YAML syntax error at line 3, column 1: /);
  });

  it('reports duplicate keys as YAML errors', () => {
    const { error } = failure('helper: /bin/h\nhelper: /bin/g\n');
    expect(error.reasons[0]).toMatch(
      /^provisioner\.yaml: YAML syntax error at line 2, column 1: Map keys must be unique/,
    );
  });

  it('rejects a document that is not a mapping', () => {
    expectOnly(
      '- a\n- b\n',
      'provisioner.yaml: the file must be a mapping of keys to values (like "workers: 4"), not a list',
    );
    expectOnly(
      'hello\n',
      'provisioner.yaml: the file must be a mapping of keys to values (like "workers: 4"), not a single string',
    );
  });

  it('rejects wrong types naming file, key and reason', () => {
    expectOnly(
      `${BASE}workers: "4"\n`,
      'provisioner.yaml: workers must be an integer, got the string "4" (remove the quotes)',
      'workers',
    );
    expectOnly(`${BASE}workers: 2.5\n`, 'provisioner.yaml: workers must be an integer, got the number 2.5', 'workers');
    expectOnly(
      `${BASE}leader_election: "true"\n`,
      'provisioner.yaml: leader_election must be a boolean, got the string "true" (remove the quotes)',
      'leader_election',
    );
    expectOnly(
      `${BASE}site: 42\n`,
      'provisioner.yaml: site must be a string, got the number 42 (put the value in quotes)',
      'site',
    );
    expectOnly(
      `${BASE}interval: 10\n`,
      'provisioner.yaml: interval must be a string, got the number 10 (put the value in quotes)',
      'interval',
    );
    expectOnly(
      `${BASE}cert_deny_list: '\\.x$'\n`,
      'provisioner.yaml: cert_deny_list must be a list, got the string "\\\\.x$"',
      'cert_deny_list',
    );
    expectOnly(
      `${BASE}cert_deny_list: [a, 5]\n`,
      'provisioner.yaml: cert_deny_list[1] must be a string, got the number 5 (put the value in quotes)',
      'cert_deny_list',
    );
    expectOnly(`${BASE}features: true\n`, 'provisioner.yaml: features must be a mapping, got true', 'features');
    expectOnly(
      `${BASE}features: {pki: 1}\n`,
      'provisioner.yaml: features.pki must be a boolean, got the number 1',
      'features.pki',
    );
  });

  it('never shows secret values in type errors', () => {
    const { error } = failure('helper: /bin/h\ntoken: 123456789\nbroker_provisioning_password: 987654321\n');
    expect(error.reasons).toEqual([
      'provisioner.yaml: token must be a string, got an integer (put the value in quotes)',
      'provisioner.yaml: broker_provisioning_password must be a string, got an integer (put the value in quotes)',
    ]);
    expect(error.message).not.toContain('123456789');
    expect(error.message).not.toContain('987654321');
  });

  it('rejects negative workers', () => {
    expectOnly(`${BASE}workers: -1\n`, 'provisioner.yaml: workers -1 is below the minimum of 0', 'workers');
  });

  it('rejects an interval below one minute', () => {
    expectOnly(`${BASE}interval: 30s\n`, 'provisioner.yaml: interval "30s" is below the minimum of 1m', 'interval');
    expectOnly(`${BASE}interval: ''\n`, 'provisioner.yaml: interval "" is below the minimum of 1m', 'interval');
    expectOnly(`${BASE}interval: -5m\n`, 'provisioner.yaml: interval "-5m" is below the minimum of 1m', 'interval');
  });

  it('rejects an interval a Node.js timer cannot wait', () => {
    expectOnly(`${BASE}interval: 30d\n`, 'provisioner.yaml: interval "30d" is above the maximum of 24d', 'interval');
  });

  it('rejects unparsable durations with the Choria error text', () => {
    expectOnly(
      `${BASE}interval: 5\n`,
      'provisioner.yaml: interval must be a string, got the number 5 (put the value in quotes)',
      'interval',
    );
    expectOnly(
      `${BASE}interval: "5"\n`,
      'provisioner.yaml: interval "5" is not a valid duration: invalid time unit 5',
      'interval',
    );
    expectOnly(
      `${BASE}interval: 1H\n`,
      'provisioner.yaml: interval "1H" is not a valid duration: time: unknown unit "H" in duration "1H"',
      'interval',
    );
    expectOnly(
      `${BASE}server_jwt_validity: 1 d\n`,
      'provisioner.yaml: server_jwt_validity "1 d" is not a valid duration: strconv.ParseFloat: parsing "1 ": invalid syntax',
      'server_jwt_validity',
    );
  });

  it('rejects helper_timeout below one second', () => {
    expectOnly(
      `${BASE}helper_timeout: 500ms\n`,
      'provisioner.yaml: helper_timeout "500ms" is below the minimum of 1s',
      'helper_timeout',
    );
  });

  it('rejects a server_jwt_validity that is zero or negative', () => {
    expectOnly(
      `${BASE}server_jwt_validity: -1d\n`,
      'provisioner.yaml: server_jwt_validity "-1d" must be greater than zero (server JWTs would be born expired)',
      'server_jwt_validity',
    );
    expectOnly(
      `${BASE}server_jwt_validity: 0.01d\n`,
      'provisioner.yaml: server_jwt_validity "0.01d" must be greater than zero (server JWTs would be born expired)',
      'server_jwt_validity',
    );
  });

  it('rejects unknown log levels', () => {
    expectOnly(
      `${BASE}loglevel: warning\n`,
      'provisioner.yaml: loglevel "warning" is not one of debug, info, warn, error, fatal',
      'loglevel',
    );
  });

  it('rejects forbidden characters in lifecycle_component', () => {
    for (const bad of ['a.b', 'a>', 'x*', 'a b']) {
      expectOnly(
        `${BASE}lifecycle_component: "${bad}"\n`,
        `provisioner.yaml: lifecycle_component ${JSON.stringify(bad)} must not contain '.', '>', '*' or whitespace (it becomes part of a NATS subject)`,
        'lifecycle_component',
      );
    }
  });

  it('rejects a monitor_allowed_hosts entry that is not a host name', () => {
    expect(() => parse(`${BASE}monitor_allowed_hosts: [prov1.example.net, "evil.example:8080", "a b"]\n`)).toThrow(
      /monitor_allowed_hosts: "evil.example:8080" must be a host name without port/,
    );
    expect(parse(`${BASE}monitor_allowed_hosts: [prov1.example.net]\n`).config.monitorAllowedHosts).toEqual([
      'prov1.example.net',
    ]);
  });

  it('rejects monitor_port out of range', () => {
    expectOnly(
      `${BASE}monitor_port: 65536\n`,
      'provisioner.yaml: monitor_port 65536 is above the maximum of 65535',
      'monitor_port',
    );
    expectOnly(
      `${BASE}monitor_port: -1\n`,
      'provisioner.yaml: monitor_port -1 is below the minimum of 0',
      'monitor_port',
    );
  });

  it('rejects invalid election and streams names', () => {
    expectOnly(
      `${BASE}leader_election_key: ".bad"\n`,
      'provisioner.yaml: leader_election_key ".bad" must be a valid key-value key (letters, digits, - / = _ and single dots, no leading or trailing dot)',
      'leader_election_key',
    );
    expectOnly(
      `${BASE}leader_election_bucket: "a.b"\n`,
      'provisioner.yaml: leader_election_bucket "a.b" must be a valid bucket name (letters, digits, - and _)',
      'leader_election_bucket',
    );
    expectOnly(
      `${BASE}streams_api_prefix: "choria.>"\n`,
      'provisioner.yaml: streams_api_prefix "choria.>" must be a NATS subject prefix (dot separated tokens, no wildcards or whitespace)',
      'streams_api_prefix',
    );
  });

  it('rejects pki together with ed25519', () => {
    expectOnly(
      `${BASE}jwt_verify_cert: abcd\njwt_signing_key: /s.seed\nfeatures: {pki: true, ed25519: true}\n`,
      'provisioner.yaml: can only enable one of pki or ed25519 features',
      'features',
    );
  });

  it('rejects leader_election_name with an explanation', () => {
    expectOnly(
      `${BASE}leader_election_name: provisioner\n`,
      'provisioner.yaml: leader_election_name was removed upstream and replaced by the boolean leader_election; remove it and set leader_election: true, otherwise every replica provisions at once (two active provisioners)',
      'leader_election_name',
    );
    // case-insensitively too
    expect(failure(`${BASE}Leader_Election_Name: x\n`).error.key).toBe('leader_election_name');
  });

  it('requires a helper unless embedding', () => {
    expectOnly(
      'token: t\n',
      'provisioner.yaml: helper is required: the command run for every node to decide its configuration',
      'helper',
    );
    expectOnly(
      "helper: '  '\ntoken: t\n",
      'provisioner.yaml: helper is required: the command run for every node to decide its configuration',
      'helper',
    );
  });

  it('requires jwt_verify_cert with jwt', () => {
    expectOnly(
      `${BASE}features: {jwt: true}\n`,
      "provisioner.yaml: features.jwt requires jwt_verify_cert (the key that verifies the nodes' provisioning.jwt)",
      'jwt_verify_cert',
    );
  });

  it('requires jwt_verify_cert and jwt_signing_key with ed25519', () => {
    const { error } = failure(`${BASE}features: {ed25519: true}\n`);
    expect(error.reasons).toEqual([
      "provisioner.yaml: features.ed25519 requires jwt_verify_cert (the Organization Issuer public key that verifies the nodes' provisioning.jwt)",
      'provisioner.yaml: features.ed25519 requires jwt_signing_key (the key that signs the server JWTs)',
    ]);
    expect(error.key).toBeUndefined();
  });

  it('requires upgrades_repository with upgrades unless optional, and checks it is a URL', () => {
    expectOnly(
      `${BASE}features: {upgrades: true}\n`,
      'provisioner.yaml: features.upgrades requires upgrades_repository (or set upgrades_optional: true)',
      'upgrades_repository',
    );
    expectOnly(
      `${BASE}upgrades_repository: /srv/repo\n`,
      'provisioner.yaml: upgrades_repository "/srv/repo" is not an http or https URL',
      'upgrades_repository',
    );
  });

  it('collects every problem, not just the first', () => {
    const { error } = failure(
      'workers: "4"\ninterval: 30s\nloglevel: loud\nlifecycle_component: a.b\nfeatures: {pki: true, ed25519: true}\n',
    );
    expect(error.reasons).toEqual([
      'provisioner.yaml: workers must be an integer, got the string "4" (remove the quotes)',
      'provisioner.yaml: loglevel "loud" is not one of debug, info, warn, error, fatal',
      "provisioner.yaml: lifecycle_component \"a.b\" must not contain '.', '>', '*' or whitespace (it becomes part of a NATS subject)",
      'provisioner.yaml: interval "30s" is below the minimum of 1m',
      'provisioner.yaml: can only enable one of pki or ed25519 features',
      'provisioner.yaml: helper is required: the command run for every node to decide its configuration',
      "provisioner.yaml: features.ed25519 requires jwt_verify_cert (the Organization Issuer public key that verifies the nodes' provisioning.jwt)",
      'provisioner.yaml: features.ed25519 requires jwt_signing_key (the key that signs the server JWTs)',
    ]);
    expect(error.problems.map((p) => p.key)).toEqual([
      'workers',
      'loglevel',
      'lifecycle_component',
      'interval',
      'features',
      'helper',
      'jwt_verify_cert',
      'jwt_signing_key',
    ]);
    expect(error.message).toBe(error.reasons.join('\n'));
    expect(error).toBeInstanceOf(Error);
  });

  it('starts every message with the base name of the source', () => {
    const err = (() => {
      try {
        parseProvisionerConfig('workers: x\n', 'relative/dir/site-a.yaml');
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('no error');
    })();
    expect(err.file).toBe('site-a.yaml');
    for (const reason of err.reasons) expect(reason.startsWith('site-a.yaml: ')).toBe(true);
  });
});

describe('warnings', () => {
  it('warns about unknown keys with a suggestion for near misses', () => {
    const { warnings } = parse(
      `${BASE}wokers: 3\nintervall: 5m\nlifecycle-component: x\nsomething_else: 1\nfeatures: {jtw: true}\n`,
    );
    expect(warnings).toEqual([
      'provisioner.yaml: unknown key "wokers" ignored (did you mean "workers"?)',
      'provisioner.yaml: unknown key "intervall" ignored (did you mean "interval"?)',
      'provisioner.yaml: unknown key "lifecycle-component" ignored (did you mean "lifecycle_component"?)',
      'provisioner.yaml: unknown key "something_else" ignored',
      'provisioner.yaml: unknown key "features.jtw" ignored (did you mean "features.jwt"?)',
    ]);
  });

  it('warns about management, rego_policy and broker_port and ignores them', () => {
    const { config, warnings } = parse(
      `${BASE}management:\n  port: 9999\nrego_policy: /etc/p.rego\nbroker_port: 4222\n`,
    );
    expect(warnings).toEqual([
      'provisioner.yaml: management is ignored: the go-backplane management interface was removed upstream in 0.13',
      'provisioner.yaml: broker_port is ignored: the embedded broker it configured was removed upstream in 0.11',
      'provisioner.yaml: rego_policy is ignored: the Open Policy Agent gate was removed upstream in December 2021',
    ]);
    expect(Object.keys(config)).not.toContain('management');
  });

  it('does not warn about rego_policy and broker_port at their defaults', () => {
    expect(parse(`${BASE}rego_policy: ''\nbroker_port: 0\n`).warnings).toEqual([]);
  });

  it('warns about an empty token', () => {
    const { warnings } = parse('helper: /bin/h\n');
    expect(warnings).toEqual([
      'provisioner.yaml: token is empty: servers whose provisioning JWT carries a token (the usual case) refuse every request',
    ]);
  });

  it('warns when choria_insecure is combined with broker_provisioning_password', () => {
    const { warnings } = parse(`${BASE}choria_insecure: true\nbroker_provisioning_password: p\n`);
    expect(warnings).toEqual([
      'provisioner.yaml: choria_insecure is true while broker_provisioning_password is set: a Choria Broker only accepts the provisioner user over verified TLS',
    ]);
  });

  it('still emits warnings when the configuration is rejected', () => {
    const { warnings, error } = failure('wokers: 3\nhelper: /bin/h\ntoken: t\ninterval: 1s\n');
    expect(warnings).toEqual(['provisioner.yaml: unknown key "wokers" ignored (did you mean "workers"?)']);
    expect(error.reasons).toEqual(['provisioner.yaml: interval "1s" is below the minimum of 1m']);
  });

  it('works without a warning callback', () => {
    expect(parseProvisionerConfig('helper: /bin/h\nbogus: 1\n', 'p.yaml', { cpuCount: 1 }).workers).toBe(1);
  });
});

describe('configSecrets', () => {
  it('returns the value of every setting the schema marks x-secret', () => {
    const secretKeys = Object.entries(provisionerConfigSchema.properties)
      .filter(([, p]) => p['x-secret'] === true)
      .map(([k]) => k)
      .sort();
    // a new secret setting must be added to configSecrets (and then here)
    expect(secretKeys).toEqual(['broker_provisioning_password', 'monitor_api_token', 'token']);
    expect(
      configSecrets({ token: 'tok-123456', brokerProvisioningPassword: 'pw-123456', monitorApiToken: '' }),
    ).toEqual(['tok-123456', 'pw-123456']);
  });
});

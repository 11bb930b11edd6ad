// JSON Schema of the provisioner YAML: the single source of truth for the keys,
// their types, defaults and descriptions. The loader validates with it (ajv), the documentation
// reference is checked against it, and `describeProvisionerKeys()` renders it for humans.
//
// Annotation keywords (prefixed `x-`) carry the rules ajv cannot express with a good message;
// the loader interprets them:
//   x-min-duration / x-max-duration  bounds of a `choria-duration` string
//   x-pattern-hint                   what a `pattern` means, for the error message
//   x-removed                        key removed upstream: its severity and the message to give
//   x-ignored                        key accepted and ignored: warning when set to a non-default value
//   x-extension                      not an upstream key (ours)
//   x-default-text                   how to describe the default when it is computed
//   x-secret                         never show the value in messages

import { deepFreeze } from './deep-freeze.js';

export const DURATION_FORMAT = 'choria-duration';

export const ANNOTATION_KEYWORDS = [
  'x-min-duration',
  'x-max-duration',
  'x-pattern-hint',
  'x-removed',
  'x-ignored',
  'x-extension',
  'x-default-text',
  'x-secret',
] as const;

export interface RemovedKeyRule {
  readonly severity: 'error' | 'warning';
  readonly message: string;
}

export interface PropertySchema {
  readonly type?: 'string' | 'integer' | 'boolean' | 'array' | 'object';
  readonly description: string;
  readonly default?: unknown;
  readonly deprecated?: boolean;
  readonly format?: typeof DURATION_FORMAT;
  readonly enum?: readonly string[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly pattern?: string;
  readonly items?: { readonly type: 'string' };
  readonly properties?: Readonly<Record<string, PropertySchema>>;
  readonly additionalProperties?: boolean;
  readonly 'x-min-duration'?: string;
  readonly 'x-max-duration'?: string;
  readonly 'x-pattern-hint'?: string;
  readonly 'x-removed'?: RemovedKeyRule;
  readonly 'x-ignored'?: string;
  readonly 'x-extension'?: boolean;
  readonly 'x-default-text'?: string;
  readonly 'x-secret'?: boolean;
}

export interface ObjectSchema {
  readonly $id: string;
  readonly title: string;
  readonly description: string;
  readonly type: 'object';
  readonly properties: Readonly<Record<string, PropertySchema>>;
  readonly additionalProperties: boolean;
}

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'fatal'] as const;

/** Upstream's default deny list. */
export const DEFAULT_CERT_DENY_LIST: readonly string[] = Object.freeze([
  '\\.privileged.mcollective$',
  '\\.privileged.choria$',
  '\\.mcollective$',
  '\\.choria$',
]);

/** Longest interval a Node.js timer can wait (setTimeout fires at once beyond 2^31-1 ms). */
const MAX_TIMER_DURATION = '24d';

const featureFlag = (description: string): PropertySchema => ({ type: 'boolean', default: false, description });

const properties: Readonly<Record<string, PropertySchema>> = {
  workers: {
    type: 'integer',
    minimum: 0,
    default: 0,
    'x-default-text': 'number of CPUs',
    description:
      'Size of the worker pool: ' +
      'the maximum number of nodes provisioned at once and of helper processes running at once ' +
      '(a node watched after a lost reply gives its worker to the next one meanwhile). ' +
      '0 or absent means one worker per CPU.',
  },
  interval: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '1m',
    'x-min-duration': '1m',
    'x-max-duration': MAX_TIMER_DURATION,
    description:
      'Period of the broadcast discovery that finds nodes waiting in provisioning mode. ' +
      'Also bounds how long a discovered node may wait in the queue (2 × interval).',
  },
  logfile: {
    type: 'string',
    'x-default-text': 'stdout',
    description:
      'Where the log goes: stdout, stderr, discard, or a file path (opened for append, lines JSON formatted). ' +
      'Empty or absent means stdout.',
  },
  loglevel: {
    type: 'string',
    enum: LOG_LEVELS,
    default: 'info',
    description: 'Lowest level logged: debug, info, warn, error or fatal. The --debug flag forces debug.',
  },
  helper: {
    type: 'string',
    default: '',
    description:
      'Command run for every node, split shell-style (quotes honoured, no shell involved). ' +
      'It receives the node data as JSON on stdin and answers with a JSON decision on stdout.',
  },
  helper_timeout: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '10s',
    'x-min-duration': '1s',
    'x-max-duration': MAX_TIMER_DURATION,
    'x-extension': true,
    description: 'Wall-clock limit for one helper run; the helper is killed and the node fails when it is exceeded.',
  },
  helper_mode: {
    type: 'string',
    enum: ['process', 'pool'],
    default: 'process',
    'x-extension': true,
    description:
      'process: one helper process per node (upstream). pool: long-lived helper processes speaking JSON lines ' +
      '(one request line in, one reply line out), which skips the per-node process start.',
  },
  helper_pool_size: {
    type: 'integer',
    minimum: 0,
    default: 0,
    'x-default-text': 'workers',
    'x-extension': true,
    description:
      'Most long-lived helper processes with helper_mode pool; ' +
      '0 means one per worker, so every worker can have a helper run in flight. ' +
      'One per CPU core starts at once; more start only while all are busy and finish after 30 s idle. ' +
      'Set it to the CPU count for a helper that computes rather than waits.',
  },
  helper_pool_depth: {
    type: 'integer',
    minimum: 1,
    maximum: 64,
    default: 1,
    'x-extension': true,
    description:
      'Requests a pool helper process may have unanswered with helper_mode pool: ' +
      '1 writes the next request only after the reply; more lets one write carry several ' +
      '(replies still one per request, in order).',
  },
  helper_spawner: {
    type: 'string',
    enum: ['auto', 'python3', 'node', 'none'],
    default: 'node',
    'x-extension': true,
    description:
      'What starts the helper processes with helper_mode process. ' +
      'node (the default): a bare Node process, the same on every host. ' +
      'python3 (opt-in, 3.9 or later): a Python companion that starts helpers with posix_spawn, which costs less CPU ' +
      'than node, whose start copies the page tables of a Node process for every helper ' +
      '(Node 24 still starts processes with fork); a run fails when it cannot come up. ' +
      'auto: python3 where it works, else node. ' +
      'none: the provisioner process itself, the slowest: each start forks the provisioner on its event loop.',
  },
  token: {
    type: 'string',
    default: '',
    'x-secret': true,
    description:
      'The provisioning token (the --token given to choria jwt provisioning, claim cht). ' +
      'Sent with every choria_provision request; servers refuse requests carrying the wrong token.',
  },
  lifecycle_component: {
    type: 'string',
    default: 'provision_mode_server',
    pattern: '^[^.>*\\s]*$',
    'x-pattern-hint': "must not contain '.', '>', '*' or whitespace (it becomes part of a NATS subject)",
    description:
      'Component name of the startup lifecycle events that trigger immediate provisioning. ' +
      'Only change it when servers use a custom component (embedded servers).',
  },
  choria_insecure: {
    type: 'boolean',
    default: false,
    description:
      'Legacy mode for the old embedded provisioning broker: ' +
      'no TLS to the broker and no protocol security, security provider forced to file; ' +
      'the same for the renewal client (`renewal_choria_config`). ' +
      'A modern Choria Broker refuses the provisioner user without verified TLS, so keep this false there.',
  },
  site: {
    type: 'string',
    default: '',
    description: 'Value of the site label on every metric; identifies this installation in dashboards.',
  },
  monitor_port: {
    type: 'integer',
    minimum: 0,
    maximum: 65535,
    default: 0,
    description:
      'When greater than 0, Prometheus metrics are served over HTTP on this port of every interface, path /metrics. ' +
      '0 turns the endpoint off.',
  },
  broker_port: {
    type: 'integer',
    default: 0,
    deprecated: true,
    'x-ignored': 'broker_port is ignored: the embedded broker it configured was removed upstream in 0.11',
    description:
      'Accepted and ignored (left over from the embedded broker removed upstream in 0.11); ' +
      'a non-zero value gives a warning.',
  },
  broker_provisioning_password: {
    type: 'string',
    default: '',
    'x-secret': true,
    description:
      "Password of the broker's provisioning account " +
      '(plugin.choria.network.provisioning.client_password on the broker). ' +
      'When set, the provisioner connects as user provisioner, which places it in the provisioning account.',
  },
  cert_deny_list: {
    type: 'array',
    items: { type: 'string' },
    default: DEFAULT_CERT_DENY_LIST,
    description:
      'Regular expressions; a CSR whose common name or any DNS name matches one is refused (pki feature), ' +
      'so a node cannot obtain a client or privileged identity. ' +
      'An entry wrapped in slashes has them stripped. An empty list means the default.',
  },
  jwt_verify_cert: {
    type: 'string',
    default: '',
    description:
      "How to verify each node's provisioning.jwt: " +
      'a file holding a PEM RSA public key or certificate, or a hex ed25519 public key; ' +
      "when no such file exists the value itself is taken as a hex ed25519 public key (the Organization Issuer's).",
  },
  jwt_signing_key: {
    type: 'string',
    default: '',
    description:
      'Path of the private key that signs server JWTs (ed25519 feature): ' +
      'a PEM RSA private key or an ed25519 seed file of 64 hex characters. ' +
      'Re-read for every node, so rotation needs no restart.',
  },
  jwt_signing_token: {
    type: 'string',
    default: '',
    description:
      "Path of the provisioner's own client JWT (created with --server-provisioner --issuer). " +
      'When set, server JWTs are chain-issued under the Organization Issuer. Re-read for every node.',
  },
  server_jwt_validity: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '1y',
    description: 'Default lifetime of the server JWTs minted by the ed25519 feature. Empty means the default.',
  },
  rego_policy: {
    type: 'string',
    default: '',
    deprecated: true,
    'x-ignored': 'rego_policy is ignored: the Open Policy Agent gate was removed upstream in December 2021',
    description:
      'Accepted and ignored (an Open Policy Agent gate removed upstream in December 2021); ' +
      'a non-empty value gives a warning.',
  },
  leader_election: {
    type: 'boolean',
    default: false,
    description:
      'Active/standby clustering through a Choria Streams leader election: ' +
      'the process starts paused and only provisions while it is the leader.',
  },
  leader_election_key: {
    type: 'string',
    default: 'provisioner',
    pattern: '^[-/=\\w]+(?:\\.[-/=\\w]+)*$',
    'x-pattern-hint':
      'must be a valid key-value key (letters, digits, - / = _ and single dots, no leading or trailing dot)',
    'x-extension': true,
    description:
      'Key in the election bucket the provisioners campaign for. Only provisioners using the same key compete, ' +
      'so separate installations sharing a broker can each elect a leader.',
  },
  leader_election_bucket: {
    type: 'string',
    default: 'CHORIA_LEADER_ELECTION',
    pattern: '^[-\\w]+$',
    'x-pattern-hint': 'must be a valid bucket name (letters, digits, - and _)',
    'x-extension': true,
    description: 'Choria Streams key-value bucket used for leader election; the broker creates CHORIA_LEADER_ELECTION.',
  },
  monitor_tls_cert: {
    type: 'string',
    default: '',
    'x-extension': true,
    description:
      'PEM certificate (chain) file: with monitor_tls_key, the monitor port serves HTTPS. ' +
      'Sites sharing a port must name the same files.',
  },
  monitor_tls_key: {
    type: 'string',
    default: '',
    'x-extension': true,
    description: 'PEM private key file of monitor_tls_cert.',
  },
  monitor_allowed_hosts: {
    type: 'array',
    items: { type: 'string' },
    default: [],
    'x-default-text': 'empty',
    'x-extension': true,
    description:
      'Host names, besides IP addresses, localhost and the bind address, ' +
      'that a request to the monitor port may name in its Host header to get the status page, /status, /nodes ' +
      'or a control request; any other name gets 403 (a defence against DNS rebinding). ' +
      'List the names operators and tools use for this host. /metrics, /healthz and /readyz answer any Host. ' +
      'Sites sharing a port: every name any of them lists.',
  },
  monitor_api_token: {
    type: 'string',
    default: '',
    'x-extension': true,
    'x-secret': true,
    description:
      'Bearer token of the monitor port: ' +
      'the control requests (POST /pause, /resume, /nodes/<identity>/release, /nodes/<identity>/retry) need it, ' +
      'and with it set the site lists its nodes (/nodes, the hosts of /status, the status page table) ' +
      'only to requests presenting it. ' +
      'Empty refuses the control requests and lists the nodes to anyone. Never logged.',
  },
  retry_backoff: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '0s',
    'x-max-duration': MAX_TIMER_DURATION,
    'x-extension': true,
    description:
      'After a failed attempt a node is not tried again for this long, ' +
      'doubling with every failure in a row up to retry_backoff_max (each wait jittered to 50-100 %). ' +
      '0 retries at the next discovery or startup event, as upstream does; 1m is a good start.',
  },
  retry_backoff_max: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '30m',
    'x-max-duration': MAX_TIMER_DURATION,
    'x-extension': true,
    description: 'The longest back-off of a failing node.',
  },
  quarantine_after: {
    type: 'integer',
    minimum: 0,
    default: 0,
    'x-extension': true,
    description:
      'After this many failed attempts in a row a node is quarantined: ' +
      'not tried again until it is released (or boots again, see quarantine_release_on_startup). ' +
      '0 never quarantines, as upstream.',
  },
  quarantine_release_on_startup: {
    type: 'boolean',
    default: true,
    'x-extension': true,
    description: 'A startup event from a quarantined node (it was restarted) releases it, and ends any back-off.',
  },
  identity_case_twins: {
    type: 'boolean',
    default: false,
    'x-extension': true,
    description:
      'Admit an identity that equals a known node but for case (web1.example.net beside WEB1.example.net). ' +
      'Refused by default: certificate names ignore case, so a helper signing per identity would sign a second ' +
      'certificate valid for a server already provisioned.',
  },
  history_store: {
    type: 'string',
    enum: ['kv', 'memory'],
    default: 'kv',
    'x-extension': true,
    description:
      'Where the per-node history (first seen, attempts, last outcome and error, back-off, quarantine) lives: ' +
      'kv keeps it in a JetStream key-value bucket shared by every instance of the site and kept across restarts, ' +
      'falling back to memory (with one warning) when the bucket cannot be reached; ' +
      'memory keeps it in this process only. See docs/operations.md#node-history.',
  },
  history_bucket: {
    type: 'string',
    default: 'CHORIA_PROVISIONER_HISTORY',
    pattern: '^[-\\w]+$',
    'x-pattern-hint': 'must be a valid bucket name (letters, digits, - and _)',
    'x-extension': true,
    description:
      'The key-value bucket of the node history; created (file storage, one value per key) when it does not exist, ' +
      'used as it is when it does.',
  },
  history_ttl: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '168h',
    'x-min-duration': '1m',
    'x-max-duration': '8760h',
    'x-extension': true,
    description:
      "How long a node's history is kept after its last change " +
      "(the bucket's max age when the provisioner creates it; the same limit in memory).",
  },
  history_api_prefix: {
    type: 'string',
    default: '$JS.API',
    pattern: '^[^.\\s*>]+(?:\\.[^.\\s*>]+)*$',
    'x-pattern-hint': 'must be a NATS subject prefix (dot separated tokens, no wildcards or whitespace)',
    'x-extension': true,
    description: "JetStream API prefix of the history bucket's account ($JS.API: the connection's own account).",
  },
  liveness_timeout: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '2s',
    'x-max-duration': '1m',
    'x-extension': true,
    description:
      "The first try of an attempt's first request waits this long; without a reply, rpcutil#ping gets as long, " +
      'and a node that answers neither is dropped as gone until the next discovery or startup event. ' +
      '0 turns it off (every try waits its full upstream timeout).',
  },
  coordination: {
    type: 'string',
    enum: ['none', 'leader_election', 'active_active'],
    'x-extension': true,
    'x-default-text': 'leader_election when leader_election is true, else none',
    description:
      'How the instances of one site share the fleet: ' +
      'none (a single instance; several unelected ones meet only at the node lock), ' +
      'leader_election (one leader provisions, the rest stand by) ' +
      'or active_active (every instance provisions its share, ' +
      'nodes assigned by rendezvous hashing over the live members). See docs/ha.md.',
  },
  coordination_group: {
    type: 'string',
    default: '',
    pattern: '^[-\\w]*$',
    'x-pattern-hint': 'must be letters, digits, - and _ (it becomes a subject token)',
    'x-extension': true,
    'x-default-text': 'the site, with other characters replaced by _, or "provisioner" when the site is empty',
    description:
      'active_active: instances with the same group share one fleet. ' +
      'Heartbeats go to provisioning.coordination.<group>.members, ' +
      'finished nodes to provisioning.coordination.<group>.done.',
  },
  coordination_heartbeat: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '2s',
    'x-min-duration': '100ms',
    'x-max-duration': '1m',
    'x-extension': true,
    description:
      'active_active: how often an instance announces itself. ' +
      'A member not heard for 3 heartbeats is gone and its share moves to the others.',
  },
  coordination_lock_retry: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '2m10s',
    'x-min-duration': '1s',
    'x-max-duration': MAX_TIMER_DURATION,
    'x-extension': true,
    description:
      'active_active: when a node this instance owns answers that another provisioner holds its lock, ' +
      "try again after this long (go-choria's lock lasts 2 minutes), unless the holder reports it finished first.",
  },
  coordination_handover: {
    type: 'boolean',
    default: true,
    'x-extension': true,
    description:
      'active_active: an instance with nothing queued asks the member with the longest queue for some of its ' +
      'queued nodes, so that no instance idles while another still has a backlog. ' +
      'Sent on provisioning.coordination.<group>.work.<process>.',
  },
  streams_api_prefix: {
    type: 'string',
    default: 'choria.streams',
    pattern: '^[^.\\s*>]+(?:\\.[^.\\s*>]+)*$',
    'x-pattern-hint': 'must be a NATS subject prefix (dot separated tokens, no wildcards or whitespace)',
    'x-extension': true,
    description:
      'JetStream API prefix under which the broker exposes Choria Streams to the provisioning account; ' +
      'the leader election requests are sent under it.',
  },
  upgrades_repository: {
    type: 'string',
    default: '',
    description:
      'Base URL (http or https) of a go-updater style release repository ' +
      'used for in-place upgrades of the Choria binary.',
  },
  upgrades_optional: {
    type: 'boolean',
    default: false,
    description: 'When an upgrade is impossible or fails, continue provisioning the node instead of failing it.',
  },
  renewal_choria_config: {
    type: 'string',
    default: '',
    'x-extension': true,
    description:
      "Renew every renewable node's certificate or server JWT before it expires: the Choria client configuration " +
      "(key = value file) of an identity on the fleet's own collective that may call choria_provision#reprovision. " +
      'Empty: no renewals.',
  },
  renewal_window: {
    type: 'integer',
    minimum: 1,
    maximum: 90,
    default: 20,
    'x-extension': true,
    description:
      "Each node renews at a random time in the last this-many percent of its credentials' validity " +
      '(but no later than renewal_margin before they expire).',
  },
  renewal_margin: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '1m',
    'x-min-duration': '1s',
    'x-max-duration': MAX_TIMER_DURATION,
    'x-extension': true,
    description:
      'The latest a renewal starts: this long before the credentials expire (and renewal_return_timeout ' +
      'earlier still where the window leaves room).',
  },
  renewal_concurrency: {
    type: 'integer',
    minimum: 1,
    default: 10,
    'x-extension': true,
    description: 'At most this many nodes of the site are renewing (sent back to provisioning) at once.',
  },
  renewal_failure_limit: {
    type: 'integer',
    minimum: 1,
    default: 3,
    'x-extension': true,
    description:
      'After this many failed renewals in a row nothing more is sent until an operator resumes the renewals.',
  },
  renewal_return_timeout: {
    type: 'string',
    format: DURATION_FORMAT,
    default: '5m',
    'x-min-duration': '5s',
    'x-max-duration': MAX_TIMER_DURATION,
    'x-extension': true,
    description:
      'A node sent back to provisioning that is not provisioned again within this long has failed its renewal, ' +
      'and stops the round.',
  },
  choria_config: {
    type: 'string',
    'x-extension': true,
    'x-default-text': '--choria-config, else the Choria client lookup',
    description:
      'Path of the Choria client configuration (key = value file) used to reach the broker. ' +
      'When set it wins over the --choria-config flag.',
  },
  features: {
    type: 'object',
    default: {},
    additionalProperties: true,
    'x-default-text': 'all off',
    description: 'Feature flags, see the features.* keys.',
    properties: {
      pki: featureFlag(
        'x509 enrolment: fetch a CSR from each node and check its names against cert_deny_list. ' +
          'Cannot be combined with ed25519.',
      ),
      jwt: featureFlag(
        "Fetch and verify each node's provisioning.jwt and pass its claims to the helper; " +
          'also needed to deliver private keys. Forced on by ed25519.',
      ),
      ed25519: featureFlag(
        'Organization Issuer enrolment: ' +
          'the node creates an ed25519 key pair and the provisioner mints its server JWT. ' +
          'Implies jwt; cannot be combined with pki.',
      ),
      upgrades: featureFlag("Honour the helper's upgrade field (in-place Choria upgrades and downgrades)."),
    },
  },
  leader_election_name: {
    deprecated: true,
    'x-removed': {
      severity: 'error',
      message:
        'leader_election_name was removed upstream and replaced by the boolean leader_election; ' +
        'remove it and set leader_election: true, otherwise every replica provisions at once (two active provisioners)',
    },
    description:
      'Removed upstream (replaced by the boolean leader_election). Rejected: ' +
      'the Helm chart still emits it, and ignoring it silently would run every replica as an active provisioner.',
  },
  management: {
    deprecated: true,
    'x-removed': {
      severity: 'warning',
      message: 'management is ignored: the go-backplane management interface was removed upstream in 0.13',
    },
    description: 'Removed upstream in 0.13 (go-backplane REST management); accepted and ignored with a warning.',
  },
};

export const provisionerConfigSchema: ObjectSchema = deepFreeze({
  $id: 'https://choria-provisioner-ts/schemas/provisioner-config.json',
  title: 'Choria Provisioner configuration',
  description: 'The provisioner YAML (or JSON) file given with --config.',
  type: 'object',
  properties,
  additionalProperties: true,
});

/** One documented key, flattened (`features.pki`), for docs and help output. */
export interface ProvisionerKeyDoc {
  readonly key: string;
  readonly type: string;
  readonly default: string;
  readonly description: string;
  readonly deprecated: boolean;
  readonly extension: boolean;
  readonly schema: PropertySchema;
}

/** Every key of the schema, nested ones flattened (`features`, `features.pki`, ...), in schema order. */
export function describeProvisionerKeys(schema: ObjectSchema = provisionerConfigSchema): readonly ProvisionerKeyDoc[] {
  const out: ProvisionerKeyDoc[] = [];
  const walk = (props: Readonly<Record<string, PropertySchema>>, prefix: string): void => {
    for (const [name, prop] of Object.entries(props)) {
      const key = prefix + name;
      out.push({
        key,
        type: typeText(prop),
        default: defaultText(prop),
        description: prop.description,
        deprecated: prop.deprecated === true,
        extension: prop['x-extension'] === true,
        schema: prop,
      });
      if (prop.properties !== undefined) walk(prop.properties, `${key}.`);
    }
  };
  walk(schema.properties, '');
  return out;
}

function typeText(prop: PropertySchema): string {
  if (prop.format === DURATION_FORMAT) return 'duration';
  switch (prop.type) {
    case undefined:
      return 'any';
    case 'array':
      return 'list of strings';
    case 'object':
      return 'map';
    default:
      return prop.type;
  }
}

function defaultText(prop: PropertySchema): string {
  if (prop['x-default-text'] !== undefined) return prop['x-default-text'];
  const value = prop.default;
  if (value === undefined) return 'none';
  if (Array.isArray(value)) return value.map((v) => `\`${String(v)}\``).join(', ');
  if (value === '') return 'empty';
  return `\`${String(value)}\``;
}

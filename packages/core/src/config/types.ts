// Typed, validated configuration values shared by every layer. Produced by the loaders in this
// folder; the rest of the library never sees raw YAML or `key = value` text.
import type { LogLevel } from '../util/logger.js';

export type { LogLevel };

export interface FeatureFlags {
  readonly pki: boolean;
  readonly jwt: boolean;
  readonly ed25519: boolean;
  readonly upgrades: boolean;
}

/** The provisioner YAML, validated, defaults applied. Durations in milliseconds. */
export interface ProvisionerConfig {
  /** file the config came from (for messages), or a label such as "<inline>" */
  readonly source: string;
  readonly workers: number;
  /** `interval`: discovery interval in milliseconds */
  readonly intervalMs: number;
  /** undefined = stdout */
  readonly logfile: string | undefined;
  readonly loglevel: LogLevel;
  readonly helper: string;
  /** extension `helper_timeout`: helper wall-clock limit in milliseconds, default 10 s */
  readonly helperTimeoutMs: number;
  /** extension: "process" (one per node, upstream) or "pool" (long-lived JSON-lines processes) */
  readonly helperMode: 'process' | 'pool';
  /** extension: pool size with helperMode "pool" (0 in the YAML resolves to the CPU count, at most `workers`) */
  readonly helperPoolSize: number;
  /** extension: requests a pool process may have unanswered (1: one at a time) */
  readonly helperPoolDepth: number;
  /**
   * extension: what starts process helpers: "node" (default), "python3", "auto"
   * (python3 where it works, else node) or "none" (the provisioner's own process)
   */
  readonly helperSpawner: 'auto' | 'python3' | 'node' | 'none';
  readonly token: string;
  readonly lifecycleComponent: string;
  readonly choriaInsecure: boolean;
  readonly site: string;
  readonly monitorPort: number;
  readonly brokerProvisioningPassword: string;
  readonly certDenyList: readonly string[];
  readonly jwtVerifyCert: string;
  readonly jwtSigningKey: string;
  readonly jwtSigningToken: string;
  /** `server_jwt_validity` in milliseconds */
  readonly serverJwtValidityMs: number;
  /**
   * extension: how the instances of a site share the fleet (`coordination`, derived from leader_election when absent)
   */
  readonly coordination: CoordinationMode;
  /** coordination === 'leader_election' (the upstream `leader_election` key) */
  readonly leaderElection: boolean;
  /** extension: the subject token active/active members of this site share */
  readonly coordinationGroup: string;
  /** extension: active/active heartbeat interval */
  readonly coordinationHeartbeatMs: number;
  /** extension: wait before retrying an owned node whose lock another provisioner holds */
  readonly coordinationLockRetryMs: number;
  /** extension: active_active: an idle member takes queued nodes from the busiest one (`coordination_handover`) */
  readonly coordinationHandover: boolean;
  /** extension: first-try wait and ping wait that tell a vanished node from a slow one; 0 = off */
  readonly livenessTimeoutMs: number;
  /** extension: HTTPS on the monitor port with these PEM files ('' for both: plain HTTP) */
  readonly monitorTlsCert: string;
  readonly monitorTlsKey: string;
  /** extension: bearer token of the monitor port's control requests; '' refuses them (never logged) */
  readonly monitorApiToken: string;
  /** extension: Host names the monitor port shows nodes and takes control requests under (monitor/host-check.ts) */
  readonly monitorAllowedHosts: readonly string[];
  /** extension: first back-off of a failing node (0: none, as upstream) and its cap */
  readonly retryBackoffMs: number;
  readonly retryBackoffMaxMs: number;
  /** extension: failed attempts in a row before quarantine; 0: never */
  readonly quarantineAfter: number;
  /** extension: a startup event releases a quarantined node */
  readonly quarantineReleaseOnStartup: boolean;
  /** extension: admit an identity equal but for case to a known node */
  readonly identityCaseTwins: boolean;
  /** extension: where the per-node history lives (kv: a shared JetStream bucket, memory as the fallback) */
  readonly historyStore: HistoryStoreKind;
  readonly historyBucket: string;
  /** extension: how long a node's history outlives its last change */
  readonly historyTtlMs: number;
  /** extension: JetStream API prefix of the history bucket, default "$JS.API" */
  readonly historyApiPrefix: string;
  /** extension: election key, default "provisioner" */
  readonly leaderElectionKey: string;
  /** extension: election KV bucket, default "CHORIA_LEADER_ELECTION" */
  readonly leaderElectionBucket: string;
  /** extension: JetStream API prefix for the election, default "choria.streams" */
  readonly streamsApiPrefix: string;
  readonly upgradesRepository: string;
  readonly upgradesOptional: boolean;
  readonly features: FeatureFlags;
  /** extension: path of the Choria client config for this site (overrides --choria-config) */
  readonly choriaConfig: string | undefined;
  /** extension: credential renewal (`renewal_*`); undefined when `renewal_choria_config` is empty */
  readonly renewal: RenewalSettings | undefined;
}

/** How a site renews its nodes' credentials before they expire (the `renewal_*` keys). */
export interface RenewalSettings {
  /** the Choria client configuration used to reach the provisioned fleet */
  readonly choriaConfig: string;
  /** renew in the last this-many percent of the validity */
  readonly windowPercent: number;
  /** ...and no later than this long before the expiry */
  readonly marginMs: number;
  /** at most this many nodes of the site renewing at once */
  readonly concurrency: number;
  /** failed renewals in a row before the renewals stop until an operator resumes them */
  readonly failureLimit: number;
  /** a node sent back to provisioning that is not provisioned again within this long has failed */
  readonly returnTimeoutMs: number;
}

/** How the instances of one site share the fleet. */
export type CoordinationMode = 'none' | 'leader_election' | 'active_active';
/** `history_store`: kv (a shared JetStream bucket, memory when it cannot be reached) or memory */
export type HistoryStoreKind = 'kv' | 'memory';

export type SecurityProvider = 'file' | 'puppet' | 'choria';

/** What the Choria client needs from the Choria client config (`key = value`), after overrides. */
export interface ChoriaSettings {
  /** file it came from, or "<inline>" */
  readonly source: string;
  readonly identity: string;
  /** broker URLs, e.g. nats://broker:4222 (plugin.choria.middleware_hosts) */
  readonly middlewareHosts: readonly string[];
  readonly collectives: readonly string[];
  readonly mainCollective: string;
  readonly securityProvider: SecurityProvider;
  /** protocol security (signing requests); false = "insecure" literals */
  readonly protocolSecure: boolean;
  /** TLS to the broker */
  readonly tls: boolean;
  /** x509 material (file / puppet providers; also TLS client cert) */
  readonly certificateFile: string | undefined;
  readonly keyFile: string | undefined;
  readonly caFile: string | undefined;
  /** choria (v2) provider: client JWT and ed25519 seed files */
  readonly tokenFile: string | undefined;
  readonly seedFile: string | undefined;
  /** certname used in the v1 callerid (choria=<certname>) */
  readonly certname: string;
  /** NATS user/password (provisioner user when broker_provisioning_password is set) */
  readonly natsUser: string | undefined;
  readonly natsPassword: string | undefined;
  /** request ttl in seconds (config `ttl`, default 60) */
  readonly ttl: number;
  /** discovery_timeout in seconds (default 2) */
  readonly discoveryTimeout: number;
  readonly loglevel: LogLevel | undefined;
  readonly logfile: string | undefined;
  /** every raw key = value pair, for diagnostics */
  readonly raw: Readonly<Record<string, string>>;
}

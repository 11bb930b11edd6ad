// Fleet options, their defaults and validation.
import type { ReprovisionBehaviour } from './agents/reprovision.js';
import type { EventFormat } from './events.js';
import type { SimulatorLogger } from './logger.js';
import type { ServerJwtVerification } from './crypto/server-jwt.js';

export type FleetProtocol = 'v1' | 'v2' | 'mixed';

export interface FleetJwtOptions {
  /** how the nodes' provisioning JWT is signed; `none` = nodes have no provisioning JWT */
  signer: 'rsa' | 'ed25519' | 'none';
  /** RSA private key PEM (signer `rsa`), signs RS256 */
  keyPem?: string;
  /** Ed25519 seed, 64 hex characters (signer `ed25519`), signs EdDSA */
  seedHex?: string;
  /** `ou` claim (default `choria`) */
  ou?: string;
  /** `update` claim: nodes allow release_update */
  update?: boolean;
  /** `extensions` claim */
  extensions?: Record<string, unknown>;
  /** `chs` claim (protocol security while provisioning) */
  chs?: boolean;
  /**
   * `chpd` claim: provisions by default (`--default`), which is what brings a go-choria server back
   * after reprovision; default: `reprovision.comesBack`
   */
  provisionDefault?: boolean;
}

/**
 * The configuration file a node boots with in provisioning mode: `provisioning`, a file that
 * enables provisioning (a server set up by hand or by configuration management), or `missing`,
 * no file at all (a server installed from the package whose provisioning JWT was made with
 * `--default`: it runs with defaults until configure writes the file). go-choria's restart action
 * refuses both before configure, with different texts.
 */
export type ConfigFileKind = 'provisioning' | 'missing';
/** One kind for every node, or one per node. */
export type ConfigFileOption = ConfigFileKind | ((index: number, identity: string) => ConfigFileKind);

export type FactsOption = Record<string, unknown> | ((index: number, identity: string) => Record<string, unknown>);
/** One version for every node, or one per node (a fleet of mixed releases). */
export type VersionOption = string | ((index: number, identity: string) => string);

export interface FleetOptions {
  /** NATS URLs */
  servers: string[];
  user?: string;
  password?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /** fleet name, used in the control subjects choria.simulator.<name>.{report,stop} (default `sim`) */
  name?: string;
  /** number of simulated servers */
  count: number;
  /**
   * identity pattern (default `node-{i}.example.net`): `{i}` is the one-based node number,
   * `{i:4}` the same zero-padded to 4 digits, `{i0}` the zero-based index
   */
  identityPattern?: string;
  /** nodes sharing one NATS connection (default 1000) */
  nodesPerConnection?: number;
  /** protocol the nodes speak (default `v1`); `mixed`: even indexes v1, odd indexes v2 */
  protocol?: FleetProtocol;
  /** provisioning token (`cht`); empty or absent = nodes accept any token */
  token?: string;
  /** provisioning JWT (default signer `none`) */
  jwt?: FleetJwtOptions;
  /** keys to verify server JWTs received by configure */
  serverJwtVerification?: ServerJwtVerification;
  /**
   * server version reported by inventory and events (default 0.29.4);
   * an older release lacks what it lacked (agents/releases.ts)
   */
  version?: VersionOption;
  /** nodes allow in-place updates (also implied by jwt.update) */
  upgradable?: boolean;
  /** the configuration file the nodes boot with (default `provisioning`) */
  configFile?: ConfigFileOption;
  /** facts reported by inventory (default `{}`) */
  facts?: FactsOption;
  /** lifecycle event format (default `cloudevents`, like real servers) */
  eventFormat?: EventFormat;
  /** nodes start at seeded random offsets within this window (default 0: all at once) */
  bootSpreadMs?: number;
  /** probability (0..1) that a node silently loses a received request */
  dropRate?: number;
  /** added before each reply */
  latencyMs?: number;
  /** uniform extra latency in [0, latencyJitterMs] */
  latencyJitterMs?: number;
  /** nodes that never reply: a count (>= 1) or a fraction (< 1) */
  silentNodes?: number;
  /** fraction of nodes that disappear after answering their first locked RPC */
  vanishRate?: number;
  /**
   * nodes that carry out some actions but never send their reply (as when it is lost on the way):
   * `nodes` is a count (>= 1) or a fraction (< 1) of the fleet, `actions` the choria_provision actions
   */
  lostReplies?: { nodes: number; actions: readonly string[] };
  /**
   * called before each choria_provision reply with status 0 is sent; `drop` loses it (a test
   * can restart the broker inside the hook to lose it "with the broker")
   */
  replyHook?: ReplyHook;
  /**
   * a node that restarted out of provisioning mode comes back into it after this long (a
   * re-provisioning: expired certificate or token, rebuilt machine), with a seeded jitter of
   * +-50 %; not scaled by timeScale. Default 0: never.
   */
  reenterAfterMs?: number;
  /**
   * provisioned nodes answer choria_provision#reprovision on their fleet's collective
   * (default: they do not listen there). `comesBack` (default true): back in provisioning mode after
   * it, as go-choria is with a provisioning JWT made with --default (`chpd`, which follows this
   * unless jwt.provisionDefault says otherwise); false: stranded. `authorized` (default true):
   * false refuses it as go-choria's RPC authorization does.
   */
  reprovision?: { collective?: string; comesBack?: boolean; authorized?: boolean };
  /** provisioning lock validity (default 120000) */
  lockMs?: number;
  /** multiplies server-side delays: restart/update/shutdown splay (default 1) */
  timeScale?: number;
  /**
   * how long release_update works (downloading and unpacking the release) before it acts and
   * answers, holding the agent mutex; past the agent's 20 s deadline no reply is sent, as by a
   * real server. Not scaled by timeScale. Default 0.
   */
  updateMs?: number;
  /** RSA key size for gencsr (default 2048) */
  rsaBits?: number;
  /** seed for every behavioural random choice (default: random) */
  seed?: number;
  /** answer choria.simulator.<name>.report / .stop (default true) */
  control?: boolean;
  /** violations kept per node in the report (counts are always exact; default 100) */
  violationLimit?: number;
  logger?: SimulatorLogger;
}

/** What a reply hook is told about the reply about to be sent. */
export interface ReplyInfo {
  identity: string;
  agent: string;
  action: string;
}

export type ReplyHook = (info: ReplyInfo) => 'send' | 'drop' | Promise<'send' | 'drop'>;

export interface ResolvedFleetOptions {
  servers: string[];
  user: string | undefined;
  password: string | undefined;
  tls: { caFile?: string; certFile?: string; keyFile?: string } | undefined;
  name: string;
  count: number;
  identityPattern: string;
  nodesPerConnection: number;
  protocol: FleetProtocol;
  token: string;
  jwt: FleetJwtOptions;
  serverJwtVerification: ServerJwtVerification | undefined;
  version: VersionOption;
  allowUpdate: boolean;
  configFile: ConfigFileOption;
  facts: FactsOption;
  eventFormat: EventFormat;
  bootSpreadMs: number;
  dropRate: number;
  latencyMs: number;
  latencyJitterMs: number;
  silentCount: number;
  vanishCount: number;
  lostReplyCount: number;
  lostReplyActions: ReadonlySet<string>;
  replyHook: ReplyHook | undefined;
  reenterAfterMs: number;
  reprovision: ReprovisionBehaviour | undefined;
  lockMs: number;
  timeScale: number;
  updateMs: number;
  rsaBits: number;
  seed: number | undefined;
  control: boolean;
  violationLimit: number;
  logger: SimulatorLogger | undefined;
}

function bad(option: string, why: string): never {
  throw new Error(`invalid simulator option ${option}: ${why}`);
}

function nonNegative(option: string, v: number | undefined, dflt: number): number {
  if (v === undefined) return dflt;
  if (!Number.isFinite(v) || v < 0) bad(option, `${v} is not a non-negative number`);
  return v;
}

function fraction(option: string, v: number | undefined): number {
  if (v === undefined) return 0;
  if (!Number.isFinite(v) || v < 0 || v > 1) bad(option, `${v} is not between 0 and 1`);
  return v;
}

const SUBJECT_TOKEN = /^[^\s.*>]+$/;

export function identityFor(pattern: string, index: number): string {
  return pattern
    .replace(/\{i0\}/g, String(index))
    .replace(/\{i:(\d+)\}/g, (_m, width: string) => String(index + 1).padStart(Number(width), '0'))
    .replace(/\{i\}/g, String(index + 1));
}

/** Identities become NATS subject tokens (provisioning.node.<identity>): no wildcards or blanks. */
export function validIdentity(identity: string): boolean {
  return identity.split('.').every((t) => SUBJECT_TOKEN.test(t));
}

export function resolveFleetOptions(o: FleetOptions): ResolvedFleetOptions {
  if (!Array.isArray(o.servers) || o.servers.length === 0) bad('servers', 'at least one NATS URL is required');
  if (!Number.isInteger(o.count) || o.count < 0) bad('count', `${o.count} is not a non-negative integer`);
  const name = o.name ?? 'sim';
  if (!SUBJECT_TOKEN.test(name)) bad('name', `${JSON.stringify(name)} must be a single NATS subject token`);
  const identityPattern = o.identityPattern ?? 'node-{i}.example.net';
  if (o.count > 1 && !/\{i(0|:\d+)?\}/.test(identityPattern))
    bad('identityPattern', 'must contain {i}, {i:N} or {i0} when count > 1');
  if (o.count > 0 && !validIdentity(identityFor(identityPattern, 0))) {
    bad('identityPattern', `${JSON.stringify(identityFor(identityPattern, 0))} is not usable as a NATS subject suffix`);
  }
  const nodesPerConnection = o.nodesPerConnection ?? 1000;
  if (!Number.isInteger(nodesPerConnection) || nodesPerConnection < 1)
    bad('nodesPerConnection', `${nodesPerConnection} is not a positive integer`);
  const protocol = o.protocol ?? 'v1';
  if (!['v1', 'v2', 'mixed'].includes(protocol)) bad('protocol', `${String(protocol)} is not v1, v2 or mixed`);
  const jwt = o.jwt ?? { signer: 'none' };
  if (jwt.signer === 'rsa' && (jwt.keyPem === undefined || jwt.keyPem === ''))
    bad('jwt.keyPem', "required when jwt.signer is 'rsa'");
  if (jwt.signer === 'ed25519' && (jwt.seedHex === undefined || !/^[0-9a-fA-F]{64}$/.test(jwt.seedHex.trim()))) {
    bad('jwt.seedHex', "must be 64 hex characters when jwt.signer is 'ed25519'");
  }
  if (!['rsa', 'ed25519', 'none'].includes(jwt.signer))
    bad('jwt.signer', `${String(jwt.signer)} is not rsa, ed25519 or none`);
  const configFile = o.configFile ?? 'provisioning';
  if (typeof configFile === 'string' && !['provisioning', 'missing'].includes(configFile))
    bad('configFile', `${String(configFile)} is not provisioning or missing`);
  const eventFormat = o.eventFormat ?? 'cloudevents';
  if (!['cloudevents', 'choria', 'none'].includes(eventFormat))
    bad('eventFormat', `${String(eventFormat)} is not cloudevents, choria or none`);
  const silent = nonNegative('silentNodes', o.silentNodes, 0);
  const silentCount = Math.min(o.count, silent < 1 ? Math.round(silent * o.count) : Math.floor(silent));
  const vanishCount = Math.round(fraction('vanishRate', o.vanishRate) * o.count);
  const lost = nonNegative('lostReplies.nodes', o.lostReplies?.nodes, 0);
  const lostReplyCount = Math.min(o.count, lost < 1 ? Math.round(lost * o.count) : Math.floor(lost));
  const rsaBits = o.rsaBits ?? 2048;
  if (!Number.isInteger(rsaBits) || rsaBits < 512 || rsaBits > 8192)
    bad('rsaBits', `${rsaBits} is not an integer between 512 and 8192`);
  const timeScale = nonNegative('timeScale', o.timeScale, 1);
  const lockMs = nonNegative('lockMs', o.lockMs, 120_000);
  if (o.seed !== undefined && !Number.isInteger(o.seed)) bad('seed', `${o.seed} is not an integer`);
  return {
    servers: o.servers,
    user: o.user,
    password: o.password,
    tls: o.tls,
    name,
    count: o.count,
    identityPattern,
    nodesPerConnection,
    protocol,
    token: o.token ?? '',
    jwt,
    serverJwtVerification: o.serverJwtVerification,
    version: o.version ?? '0.29.4',
    allowUpdate: (o.upgradable ?? false) || (jwt.update ?? false),
    configFile,
    facts: o.facts ?? {},
    eventFormat,
    bootSpreadMs: nonNegative('bootSpreadMs', o.bootSpreadMs, 0),
    dropRate: fraction('dropRate', o.dropRate),
    latencyMs: nonNegative('latencyMs', o.latencyMs, 0),
    latencyJitterMs: nonNegative('latencyJitterMs', o.latencyJitterMs, 0),
    silentCount,
    vanishCount,
    lostReplyCount,
    lostReplyActions: new Set(o.lostReplies?.actions ?? []),
    replyHook: o.replyHook,
    reenterAfterMs: nonNegative('reenterAfterMs', o.reenterAfterMs, 0),
    reprovision:
      o.reprovision === undefined
        ? undefined
        : {
            collective: o.reprovision.collective ?? 'mcollective',
            comesBack: o.reprovision.comesBack ?? true,
            authorized: o.reprovision.authorized ?? true,
          },
    lockMs,
    timeScale,
    updateMs: nonNegative('updateMs', o.updateMs, 0),
    rsaBits,
    seed: o.seed,
    control: o.control ?? true,
    violationLimit: o.violationLimit ?? 100,
    logger: o.logger,
  };
}

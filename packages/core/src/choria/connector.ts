// Connects to the Choria broker with the nats package: servers, TLS, credentials, reconnect policy
// and status logging.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  connect,
  Events,
  type Authenticator,
  type ConnectionOptions,
  type NatsConnection,
  type Status,
  type TlsOptions,
} from 'nats';
import type { Logger } from 'winston';
import type { ChoriaSettings } from '../config/types.js';
import { ConnectError } from './errors.js';
import { loadChoriaCredentials, signNatsNonce, type ChoriaCredentials } from './security/choria-credentials.js';
import { replySubjectPrefix } from './protocol/subjects.js';

export interface ConnectChoriaOptions {
  readonly logger: Logger;
  /** connection name shown by the broker (default `choria-provisioner <identity>`) */
  readonly name?: string;
  /** every nats status event (disconnect, reconnect, ...), after it has been logged */
  readonly onStatus?: (status: Status) => void;
  /** stops the first-connect retry loop */
  readonly signal?: AbortSignal;
  /** give up after this many failed first-connect rounds (default: retry forever) */
  readonly maxConnectAttempts?: number;
  /** TCP + handshake limit per server per attempt (default 10 s) */
  readonly connectTimeoutMs?: number;
  /** the collective of the client's inboxes (default `provisioning`) */
  readonly collective?: string;
}

/** Reconnect/retry delays: exponential from 250 ms to 5 s, each randomised to [75 %, 125 %). */
export const BACKOFF_MIN_MS = 250;
export const BACKOFF_MAX_MS = 5_000;

export function backoffDelayMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.max(0, attempt));
  return Math.round(base * (0.75 + random() * 0.5));
}

/** The longest wait between two reconnect attempts during an outage. */
export const OUTAGE_RECONNECT_MAX_MS = 1_000;

/**
 * nats.js asks for a delay on every pass of its reconnect loop (also while it is only waiting), so
 * the delay grows with the length of the outage rather than with a call count: a quarter of the
 * outage so far, from 250 ms to 1 s. One connection attempt a second costs a restarting broker
 * nothing, and the provisioner is back at most ~1.25 s after the broker: every attempt in flight at
 * the outage waits for that moment (its lost-reply check cannot start before), so this bounds how
 * long a broker restart holds up the fleet.
 */
export class OutageBackoff {
  #disconnectedAt: number | undefined;
  readonly #now: () => number;
  readonly #random: () => number;

  constructor(now: () => number = Date.now, random: () => number = Math.random) {
    this.#now = now;
    this.#random = random;
  }

  disconnected(): void {
    this.#disconnectedAt ??= this.#now();
  }

  connected(): void {
    this.#disconnectedAt = undefined;
  }

  delay(): number {
    const outage = this.#disconnectedAt === undefined ? 0 : this.#now() - this.#disconnectedAt;
    const base = Math.min(OUTAGE_RECONNECT_MAX_MS, Math.max(BACKOFF_MIN_MS, outage / 4));
    return Math.round(base * (0.75 + this.#random() * 0.5));
  }
}

/** Broker URLs from plugin.choria.middleware_hosts; a bare host:port gets the nats:// scheme. */
export function natsServers(settings: ChoriaSettings): string[] {
  const servers = settings.middlewareHosts.map((h) => h.trim()).filter((h) => h !== '');
  if (servers.length === 0) {
    throw new ConnectError(
      `no Choria broker configured: plugin.choria.middleware_hosts is empty in ${settings.source}`,
    );
  }
  return servers.map((h) => (h.includes('://') ? h : `nats://${h}`));
}

/**
 * CONNECT credentials for the `choria` provider: the client JWT as `auth_token` and as user JWT,
 * with `sig` = ed25519 signature of the server nonce. Hand-written because nats.js's JWT
 * authenticator expects NKEY seeds and Choria seeds are raw hex.
 */
export function choriaAuthenticator(credentials: ChoriaCredentials, user?: string, pass?: string): Authenticator {
  return (nonce?: string) => ({
    auth_token: credentials.token,
    jwt: credentials.token,
    ...(nonce !== undefined && nonce !== '' ? { sig: signNatsNonce(credentials.privateKey, nonce) } : {}),
    ...(user !== undefined && user !== '' ? { user, pass: pass ?? '' } : {}),
  });
}

function tlsOptions(settings: ChoriaSettings): TlsOptions | undefined {
  if (!settings.tls) return undefined;
  // nats.js passes unknown keys through to tls.connect, which is how rejectUnauthorized gets there
  const tls: TlsOptions & { rejectUnauthorized?: boolean } = {};
  if (settings.certificateFile !== undefined && settings.keyFile !== undefined) {
    tls.certFile = settings.certificateFile;
    tls.keyFile = settings.keyFile;
  }
  if (settings.caFile !== undefined) tls.caFile = settings.caFile;
  // Go's issuer-mode clients skip server verification when no CA is configured
  else if (settings.securityProvider === 'choria') tls.rejectUnauthorized = false;
  return tls;
}

/** How often each connection pings the broker, and how many pings may go unanswered before it is replaced. */
export const PING_INTERVAL_MS = 2_000;
export const MAX_PINGS_OUT = 2;

/** The nats.js options for these settings (without connecting); exported for tests. */
export function natsConnectionOptions(
  settings: ChoriaSettings,
  opts: {
    name?: string;
    connectTimeoutMs?: number;
    credentials?: ChoriaCredentials;
    reconnectDelay?: () => number;
    collective?: string;
  },
): ConnectionOptions {
  const options: ConnectionOptions = {
    servers: natsServers(settings),
    name: opts.name ?? `choria-provisioner ${settings.identity}`,
    reconnect: true,
    maxReconnectAttempts: -1,
    // retry forever also when the broker briefly refuses credentials (e.g. while it restarts)
    ignoreAuthErrorAbort: true,
    timeout: opts.connectTimeoutMs ?? 10_000,
    // A path that goes silent without closing (a NAT or firewall that dropped its state, a
    // half-failed link) looks connected for ever: nothing arrives and nothing is closed. The
    // client's pings find it: with more than MAX_PINGS_OUT of them unanswered the connection is
    // replaced, within (MAX_PINGS_OUT + 1) x PING_INTERVAL_MS, where the nats.js defaults (2
    // minutes, 2 out) take four to six minutes of requests lost into the void.
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: MAX_PINGS_OUT,
    // nats.js otherwise builds two Errors (with stack traces) for every request, "just in case",
    // a cost on every history write; our own errors say what timed out
    noAsyncTraces: true,
    ...(opts.reconnectDelay !== undefined ? { reconnectDelayHandler: opts.reconnectDelay } : {}),
  };
  const tls = tlsOptions(settings);
  if (tls !== undefined) options.tls = tls;
  if (opts.credentials !== undefined) {
    options.authenticator = choriaAuthenticator(opts.credentials, settings.natsUser, settings.natsPassword);
    // the broker only lets JWT clients use <collective>.reply.<md5(callerid)>.> for inboxes
    options.inboxPrefix = replySubjectPrefix(opts.credentials.callerId, opts.collective).slice(0, -1);
  } else if (settings.natsUser !== undefined && settings.natsUser !== '') {
    options.user = settings.natsUser;
    if (settings.natsPassword !== undefined) options.pass = settings.natsPassword;
  }
  return options;
}

function logStatus(logger: Logger, status: Status): void {
  const data =
    typeof status.data === 'string' || typeof status.data === 'number'
      ? String(status.data)
      : JSON.stringify(status.data);
  switch (status.type) {
    case Events.Disconnect:
      logger.warn(`disconnected from Choria broker ${data}`);
      break;
    case Events.Reconnect:
      logger.info(`reconnected to Choria broker ${data}`);
      break;
    case Events.Error:
      logger.error(`Choria broker connection error: ${data}`);
      break;
    case Events.LDM:
      logger.warn(`Choria broker ${data} is entering lame duck mode`);
      break;
    default:
      logger.debug(`Choria broker connection status ${status.type}: ${data}`);
  }
}

/**
 * Connects and keeps the connection alive forever. The first connection is retried with backoff
 * until it succeeds (each failure logged); nats.js's own waitOnFirstConnect retries silently
 * because its status stream only exists after the first success, so the first round is ours.
 */
export async function connectChoria(settings: ChoriaSettings, opts: ConnectChoriaOptions): Promise<NatsConnection> {
  const { logger } = opts;
  const credentials =
    settings.securityProvider === 'choria'
      ? loadChoriaCredentials(settings.tokenFile, settings.seedFile, settings.source)
      : undefined;
  const backoff = new OutageBackoff();
  const options = natsConnectionOptions(settings, {
    ...(opts.name !== undefined ? { name: opts.name } : {}),
    ...(opts.connectTimeoutMs !== undefined ? { connectTimeoutMs: opts.connectTimeoutMs } : {}),
    ...(credentials !== undefined ? { credentials } : {}),
    ...(opts.collective !== undefined ? { collective: opts.collective } : {}),
    reconnectDelay: () => backoff.delay(),
  });
  const urls = (options.servers as string[]).join(', ');

  let nc: NatsConnection | undefined;
  for (let attempt = 0; nc === undefined; attempt++) {
    if (opts.signal?.aborted === true)
      throw new ConnectError(`could not connect to ${urls}: aborted`, { cause: opts.signal.reason });
    try {
      nc = await connect(options);
    } catch (err) {
      const reason = (err as Error).message;
      if (opts.maxConnectAttempts !== undefined && attempt + 1 >= opts.maxConnectAttempts) {
        throw new ConnectError(`could not connect to ${urls}: ${reason}`, { cause: err });
      }
      const delay = backoffDelayMs(attempt);
      logger.warn(`could not connect to ${urls}: ${reason}, retrying`, { retryInMs: delay });
      try {
        await sleep(delay, undefined, opts.signal !== undefined ? { signal: opts.signal } : {});
      } catch {
        throw new ConnectError(`could not connect to ${urls}: aborted`, { cause: opts.signal?.reason });
      }
    }
  }

  logger.info(`connected to Choria broker ${nc.getServer()}`, { name: options.name });
  const connection = nc;
  void (async () => {
    for await (const status of connection.status()) {
      if (status.type === Events.Disconnect) backoff.disconnected();
      if (status.type === Events.Reconnect) backoff.connected();
      logStatus(logger, status);
      try {
        opts.onStatus?.(status);
      } catch (err) {
        logger.error(`connection status handler failed: ${(err as Error).message}`);
      }
    }
  })().catch((err: unknown) => logger.error(`connection status monitoring stopped: ${(err as Error).message}`));
  void connection.closed().then((err) => {
    if (err !== undefined) logger.error(`Choria broker connection closed: ${err.message}`);
    else logger.debug('Choria broker connection closed');
  });
  return connection;
}

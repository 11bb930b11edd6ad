// Keeps a site's NodeHistory in step with its bucket: opens it (history_store kv), loads and
// follows it, writes through it (except in a dry run), and when it cannot be reached keeps the
// history in memory, says so once and tries again every `retryMs`.
//
// Where the bucket can live: a Choria Broker gives the provisioning account (where the provisioner
// logs in as the `provisioner` user) no JetStream at all, only the leader election's two subjects.
// The same client certificate without that login lands in the choria account, which has Choria
// Streams. So when the provisioner's own connection finds no JetStream and a second connection is
// on offer (the provisioner logged in as `provisioner`), the history is kept over that one.
import { shownIdentity, type RefusedIdentities } from '../../choria/identity.js';
import type { NatsConnection } from 'nats';
import type { Logger } from 'winston';
import type { ProvisionerConfig } from '../../config/types.js';
import { formatMs } from '../../util/duration.js';
import { errorText } from '../../util/values.js';
import { HistoryBucket, type SiteRecordBacking } from './bucket.js';
import type { NodeHistory } from './node-history.js';

/** Where the per-node history lives and how much of it this instance holds. */
export interface HistoryStatus {
  /** kv: the shared bucket; memory: this process only */
  store: 'kv' | 'memory';
  /** store kv: the bucket, and its max age in ms (0: none) */
  bucket?: string;
  ttlMs?: number;
  /**
   * store kv: the connection the bucket is reached over: `provisioner`, the provisioner's own (its
   * account: the provisioning account when it logs in as `provisioner`), or `choria`, a second
   * connection without the provisioner login, which a Choria Broker puts in its choria account
   */
  connection?: HistoryConnectionKind;
  /** store memory although history_store is kv: why */
  reason?: string;
  /** `run --dry-run`: the bucket is read, never written */
  readOnly?: boolean;
  /** nodes with a record in this instance's memory */
  nodes: number;
  /** records changed here and not yet in the bucket */
  pendingWrites: number;
}

export type HistoryConnectionKind = 'provisioner' | 'choria';

/** A second way to the broker: the same Choria client settings without the provisioner login. */
export interface HistoryConnection {
  readonly kind: HistoryConnectionKind;
  /** connects; rejects (bounded) when it cannot */
  connect(): Promise<NatsConnection>;
}

export interface HistorySyncOptions {
  readonly history: NodeHistory;
  /** where records whose identity fails the identity rule go (default: logged) */
  readonly refusals?: RefusedIdentities;
  readonly config: Pick<
    ProvisionerConfig,
    'historyStore' | 'historyBucket' | 'historyTtlMs' | 'historyApiPrefix' | 'site'
  >;
  readonly logger: Logger;
  /** read the bucket, never write it */
  readonly readOnly: boolean;
  /** how often an unreachable bucket is tried again, default 60 s */
  readonly retryMs?: number;
  /** how long a start waits for the stored records, default 30 s (they go on loading after it) */
  readonly loadTimeoutMs?: number;
  /** tried when the provisioner's own connection has no JetStream (see the top of this file) */
  readonly secondary?: HistoryConnection;
}

/** Pending writes (after failures) are sent again this often. */
const FLUSH_MS = 5_000;

export class HistorySync {
  readonly #opts: HistorySyncOptions;
  #bucket: HistoryBucket | undefined;
  #connection: HistoryConnectionKind | undefined;
  /** the second connection, once opened (closed by stop()) */
  #secondaryNc: NatsConnection | undefined;
  /** why the history is in memory although history_store is kv */
  #fallback: string | undefined;
  #timers: NodeJS.Timeout[] = [];
  #stopped = false;

  constructor(opts: HistorySyncOptions) {
    this.#opts = opts;
  }

  /** Opens the bucket (or falls back to memory); resolves once the stored records are loaded. */
  async start(nc: NatsConnection): Promise<void> {
    const { config, logger } = this.#opts;
    // a provisioner stopped while it was still starting calls this after stop(): nothing to open
    if (this.#stopped) return;
    if (config.historyStore === 'memory') {
      logger.info(
        'Keeping the node history in memory (history_store: memory): ' +
          'it is not shared with other instances and ends with this process',
      );
      return;
    }
    const reason = await this.#bindAnywhere(nc);
    // stopped while the first bind was under way: a retry timer armed now would outlive stop()
    // (whose clearInterval ran already) and keep the process alive
    if (reason === undefined || this.#stopped) return;
    this.#fallback = reason;
    const retryMs = this.#opts.retryMs ?? 60_000;
    logger.warn(
      `Keeping the node history in memory only: ${reason}. ` +
        `It is not shared with other instances and ends with this process; ` +
        `trying the bucket again every ${formatMs(retryMs)} (docs/operations.md#node-history)`,
    );
    const retry = setInterval(() => {
      void this.#bindAnywhere(nc).then((again) => {
        if (again !== undefined || this.#stopped) return;
        clearInterval(retry);
        this.#fallback = undefined;
        logger.warn(
          `The node history bucket ${config.historyBucket} is reachable now ` +
            `(over the ${this.#connection ?? 'provisioner'} connection): keeping the history there`,
        );
      });
    }, retryMs);
    this.#timers.push(retry);
  }

  /** The provisioner's own connection first, then the second connection; why neither, if neither. */
  async #bindAnywhere(nc: NatsConnection): Promise<string | undefined> {
    const own = await this.#bind(nc, 'provisioner');
    const secondary = this.#opts.secondary;
    if (own === undefined || secondary === undefined || this.#stopped) return own;
    let other: NatsConnection;
    try {
      other = this.#secondaryNc ?? (await secondary.connect());
    } catch (err) {
      return `${own}; and a second connection to the ${secondary.kind} account failed: ${errorText(err)}`;
    }
    if (this.#stopped) {
      await other.close().catch(() => undefined);
      return own;
    }
    this.#secondaryNc = other;
    const there = await this.#bind(other, secondary.kind);
    return there === undefined ? undefined : `${own}; and in the ${secondary.kind} account: ${there}`;
  }

  /** Lets the last writes land (bounded), then stops following the bucket. */
  async stop(settleMs = 2_000): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.#opts.history.settle(settleMs);
    this.#bucket?.close();
    await this.#secondaryNc?.close().catch(() => undefined);
  }

  /** A record of the whole site in the shared bucket; undefined while there is none or in a dry run. */
  siteRecord(name: string): SiteRecordBacking | undefined {
    return this.#opts.readOnly ? undefined : this.#bucket?.siteRecord(name);
  }

  status(): HistoryStatus {
    const bucket = this.#bucket;
    const history = this.#opts.history;
    return {
      store: bucket !== undefined ? 'kv' : 'memory',
      ...(bucket !== undefined
        ? { bucket: bucket.info.bucket, ttlMs: bucket.info.ttlMs, connection: this.#connection ?? 'provisioner' }
        : {}),
      ...(this.#fallback !== undefined ? { reason: this.#fallback } : {}),
      ...(bucket !== undefined && this.#opts.readOnly ? { readOnly: true } : {}),
      nodes: history.size,
      pendingWrites: history.pendingWrites,
    };
  }

  /** Opens and follows the bucket over `nc`; returns why not when it cannot. */
  async #bind(nc: NatsConnection, connection: HistoryConnectionKind): Promise<string | undefined> {
    const { config, logger, history, readOnly } = this.#opts;
    const name = config.historyBucket;
    let bucket: HistoryBucket;
    try {
      bucket = await HistoryBucket.open({
        nc,
        bucket: name,
        ttlMs: config.historyTtlMs,
        apiPrefix: config.historyApiPrefix,
        site: config.site,
      });
    } catch (err) {
      return errorText(err);
    }
    const loading = bucket.watch({
      onRecord: (r, revision) => history.merge(r, revision),
      onInvalid: (key, why) => logger.warn(`Ignoring key ${key} of the history bucket ${name}: ${why}`),
      onRefusedIdentity: (text, why) => {
        if (this.#opts.refusals !== undefined) this.#opts.refusals.refuse(text, why, 'history');
        else
          logger.warn(
            `Ignoring a record of the history bucket ${name}: its identity ${shownIdentity(text)} is refused: ${why}`,
          );
      },
      onRewatch: (err) => logger.warn(`Following the history bucket ${name} again after: ${errorText(err)}`),
    });
    const loadTimeoutMs = this.#opts.loadTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const loaded = await Promise.race([
      loading.then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), loadTimeoutMs))),
    ]).catch((err: unknown) => errorText(err));
    clearTimeout(timer);
    if (typeof loaded === 'string' || this.#stopped) {
      bucket.close();
      return typeof loaded === 'string' ? `could not read the history bucket ${name}: ${loaded}` : undefined;
    }
    this.#bucket = bucket;
    this.#connection = connection;
    if (!readOnly) {
      history.attach(bucket);
      this.#timers.push(setInterval(() => history.flush(), FLUSH_MS));
    }
    const ttl =
      bucket.info.ttlMs > 0 ? `kept ${formatMs(bucket.info.ttlMs)} after each change` : 'kept without an age limit';
    const account =
      connection === 'choria'
        ? " of the choria account (over a second connection: the provisioner's own account has no JetStream)"
        : '';
    logger.info(
      `Keeping the node history in the bucket ${name}${account} ` +
        `(${bucket.info.created ? 'created now, ' : ''}${history.size} nodes known, ${ttl}` +
        `${readOnly ? '; read only for the dry run' : ''})` +
        `${loaded ? '' : `; still loading after ${formatMs(loadTimeoutMs)}`}`,
    );
    if (bucket.info.ttlMs > 0 && bucket.info.ttlMs !== config.historyTtlMs) {
      logger.warn(
        `The history bucket ${name} keeps records for ${formatMs(bucket.info.ttlMs)}, ` +
          `not history_ttl ${formatMs(config.historyTtlMs)}: an existing bucket is used as it is`,
      );
    }
    return undefined;
  }
}

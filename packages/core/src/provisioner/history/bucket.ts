// The shared copy of the node history: a JetStream key-value bucket, one key a node of a site
// (keys.ts), one value a key, aged out `history_ttl` after its last write. Created here when it
// does not exist, with discard-old and a byte limit so a fleet beyond every estimate drops its
// least recently changed nodes instead of refusing new writes; an existing bucket is used as it is
// (an operator may have made it with other replicas or limits).
import { shownIdentity, whyNotIdentity } from '../../choria/identity.js';
import {
  DiscardPolicy,
  ErrorCode,
  NatsError,
  RetentionPolicy,
  StorageType,
  nanos,
  type KV,
  type KvEntry,
  type NatsConnection,
  type QueuedIterator,
} from 'nats';
import { ProvisionerError } from '../../util/errors.js';
import { errorText } from '../../util/values.js';
import { historyKey, identityOfKey, siteFilter, siteRecordKey } from './keys.js';
import { decodeRecord, encodeRecord, type NodeRecord } from './record.js';
import type { HistoryBacking } from './node-history.js';
import { HistoryWriteRefusedError, RevisionConflictError, type StoredVersion } from './shared-records.js';

/**
 * The byte limit of a bucket created here: room for 100,000 records of the largest size a record
 * may have (BENCHMARKS.md, "Node history", has the size of records as written).
 */
export const HISTORY_BUCKET_MAX_BYTES = 128 * 1024 * 1024;
/** A value limit well above the largest record (identity ≤ 255 bytes, error ≤ 400 characters). */
export const HISTORY_MAX_VALUE_BYTES = 4096;

export class HistoryUnavailableError extends ProvisionerError {}

/** JetStream's error code for a message larger than the stream's max_msg_size. */
const JS_MESSAGE_TOO_LARGE = 10054;
/** JetStream's error code for a publish whose expected last sequence of the subject is not the stored one. */
const JS_WRONG_LAST_SEQUENCE = 10071;

/** Whether `err` from a conditional put says the key is at another revision. */
function wrongRevision(err: unknown): boolean {
  return err instanceof NatsError && err.api_error?.err_code === JS_WRONG_LAST_SEQUENCE;
}

/** Whether `err` from a put is the record's own fault, so that no later try can succeed. */
function refusedForGood(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err instanceof NatsError)
    return err.code === ErrorCode.MaxPayloadExceeded || err.api_error?.err_code === JS_MESSAGE_TOO_LARGE;
  return err.message.startsWith('invalid key');
}

export interface HistoryBucketOptions {
  readonly nc: NatsConnection;
  readonly bucket: string;
  readonly ttlMs: number;
  readonly apiPrefix: string;
  readonly site: string;
  /** JetStream request limit, default 5 s */
  readonly timeoutMs?: number;
}

/** A record of the whole site in the bucket, as bytes, with compare-and-set writes. */
export interface SiteRecordBacking {
  write(value: Uint8Array, revision: number): Promise<number>;
  read(): Promise<StoredVersion<Uint8Array>>;
}

export interface HistoryBucketInfo {
  readonly bucket: string;
  /** the bucket's own max age (0: none), which may differ from history_ttl for a bucket made elsewhere */
  readonly ttlMs: number;
  readonly created: boolean;
}

export interface WatchHandlers {
  /** a record and its revision (the bucket's sequence: a later write has a higher one) */
  readonly onRecord: (record: NodeRecord, revision: number) => void;
  readonly onInvalid: (key: string, reason: string) => void;
  /** a record's key names an identity that fails the identity rule (choria/identity.ts) */
  readonly onRefusedIdentity: (text: string, why: string) => void;
  /** the watch ended with an error and is being started again */
  readonly onRewatch?: (err: unknown) => void;
}

/** Why JetStream said no, in an operator's words. */
function unavailableReason(err: unknown, apiPrefix: string, bucket: string, ttlMs: number): string {
  // A Choria Streams user (`choria jwt client --stream-user`) may use buckets but not create them
  if (
    err instanceof NatsError &&
    err.code === ErrorCode.PermissionsViolation &&
    (err.permissionContext?.subject ?? '').includes('.STREAM.CREATE.')
  ) {
    return (
      `this connection may use Choria Streams but not create the bucket (${errorText(err)}): ` +
      `have a Streams admin create it once, e.g. ` +
      `\`choria kv add ${bucket} --history 1 --ttl ${Math.max(1, Math.round(ttlMs / 3_600_000))}h\`, ` +
      `or give the provisioner's client JWT --stream-admin`
    );
  }
  if (err instanceof NatsError && err.code === ErrorCode.NoResponders) {
    return (
      `no JetStream answers under ${apiPrefix} for this connection's account (JetStream off, ` +
      `or not given to the account)`
    );
  }
  if (err instanceof NatsError && err.code === ErrorCode.Timeout)
    return `JetStream did not answer under ${apiPrefix} in time`;
  return errorText(err);
}

export class HistoryBucket implements HistoryBacking {
  readonly info: HistoryBucketInfo;
  readonly #kv: KV;
  readonly #site: string;
  #watch: QueuedIterator<KvEntry> | undefined;
  #closed = false;
  #revision = 0;

  private constructor(kv: KV, site: string, info: HistoryBucketInfo) {
    this.#kv = kv;
    this.#site = site;
    this.info = info;
  }

  /** Binds to the bucket, creating it first when it is missing; throws HistoryUnavailableError saying why not. */
  static async open(opts: HistoryBucketOptions): Promise<HistoryBucket> {
    const timeout = opts.timeoutMs ?? 5_000;
    const stream = `KV_${opts.bucket}`;
    try {
      const jsm = await opts.nc.jetstreamManager({ apiPrefix: opts.apiPrefix, timeout });
      let created = false;
      let maxAgeNs: number;
      try {
        maxAgeNs = (await jsm.streams.info(stream)).config.max_age;
      } catch (err) {
        if (!(err instanceof Error) || err.message !== 'stream not found') throw err;
        const config = await jsm.streams.add({
          name: stream,
          subjects: [`$KV.${opts.bucket}.>`],
          retention: RetentionPolicy.Limits,
          storage: StorageType.File,
          discard: DiscardPolicy.Old,
          max_msgs_per_subject: 1,
          max_age: nanos(opts.ttlMs),
          max_bytes: HISTORY_BUCKET_MAX_BYTES,
          max_msg_size: HISTORY_MAX_VALUE_BYTES,
          num_replicas: 1,
          allow_rollup_hdrs: true,
          deny_delete: true,
          allow_direct: true,
          duplicate_window: nanos(Math.min(opts.ttlMs, 120_000)),
        });
        maxAgeNs = config.config.max_age;
        created = true;
      }
      // the manager above has probed the API already: binding need not ask again
      const kv = await opts.nc
        .jetstream({ apiPrefix: opts.apiPrefix, timeout, checkAPI: false })
        .views.kv(opts.bucket, { bindOnly: true });
      return new HistoryBucket(kv, opts.site, { bucket: opts.bucket, ttlMs: Math.round(maxAgeNs / 1e6), created });
    } catch (err) {
      throw new HistoryUnavailableError(
        `could not open the history bucket ${opts.bucket}: ` +
          `${unavailableReason(err, opts.apiPrefix, opts.bucket, opts.ttlMs)}`,
        { cause: err },
      );
    }
  }

  /**
   * Writes `record` if its key is still at `revision` (0: no key): a JetStream KV create or update
   * with the expected revision. Resolves the new revision; rejects with RevisionConflictError
   * carrying what is stored now, HistoryWriteRefusedError when the broker will never take it, or
   * the broker's error.
   */
  async write(record: NodeRecord, revision: number): Promise<number> {
    const key = historyKey(this.#site, record.identity);
    if (key === undefined)
      throw new HistoryWriteRefusedError(
        `no history record is written for ${shownIdentity(record.identity)}: not an identity`,
      );
    const value = encodeRecord(record);
    try {
      return revision === 0 ? await this.#kv.create(key, value) : await this.#kv.update(key, value, revision);
    } catch (err) {
      if (wrongRevision(err))
        throw new RevisionConflictError(
          `the history record of ${shownIdentity(record.identity)} is no longer at revision ${revision}`,
          await this.read(record.identity),
        );
      if (!refusedForGood(err)) throw err;
      throw new HistoryWriteRefusedError(
        `the broker refuses the history record of ${shownIdentity(record.identity)}: ${errorText(err)}`,
        { cause: err },
      );
    }
  }

  /** The stored version of a node's record: no key is revision 0; a value that is not its record reads as none. */
  async read(identity: string): Promise<StoredVersion<NodeRecord>> {
    const key = historyKey(this.#site, identity);
    if (key === undefined) return { value: undefined, revision: 0 };
    const entry = await this.#kv.get(key);
    if (entry === null) return { value: undefined, revision: 0 };
    if (entry.operation !== 'PUT') return { value: undefined, revision: entry.revision };
    try {
      const record = decodeRecord(entry.value);
      return { value: record.identity === identity ? record : undefined, revision: entry.revision };
    } catch {
      return { value: undefined, revision: entry.revision };
    }
  }

  /**
   * One record of the whole site under its own key (siteRecordKey), read and written as bytes with
   * compare-and-set: a write conditional on `revision` rejects with RevisionConflictError carrying
   * the stored bytes and revision.
   */
  siteRecord(name: string): SiteRecordBacking {
    const key = siteRecordKey(this.#site, name);
    const read = async (): Promise<StoredVersion<Uint8Array>> => {
      const entry = await this.#kv.get(key);
      if (entry === null) return { value: undefined, revision: 0 };
      return { value: entry.operation === 'PUT' ? entry.value : undefined, revision: entry.revision };
    };
    return {
      read,
      write: async (value, revision) => {
        try {
          return revision === 0 ? await this.#kv.create(key, value) : await this.#kv.update(key, value, revision);
        } catch (err) {
          if (wrongRevision(err))
            throw new RevisionConflictError(
              `the site record ${name} is no longer at revision ${revision}`,
              await read(),
            );
          throw err;
        }
      },
    };
  }

  /**
   * Delivers every stored record of the site, then every change, until close(); resolves once the
   * stored ones are delivered (rejects when the watch cannot start). A watch that ends with an
   * error (a broker restart) starts again after the last revision seen.
   */
  async watch(handlers: WatchHandlers): Promise<void> {
    let loaded!: () => void;
    const initial = new Promise<void>((resolve) => (loaded = resolve));
    let iterator = await this.#startWatch(loaded);
    void (async () => {
      for (;;) {
        try {
          for await (const entry of iterator) this.#deliver(entry, handlers);
          if (this.#closed) return;
        } catch (err) {
          if (this.#closed) return;
          handlers.onRewatch?.(err);
        }
        for (;;) {
          await new Promise((r) => setTimeout(r, 2_000).unref());
          if (this.#closed) return;
          try {
            iterator = await this.#startWatch(() => undefined);
            break;
          } catch (err) {
            handlers.onRewatch?.(err);
          }
        }
      }
    })();
    await initial;
  }

  async #startWatch(initialized: () => void): Promise<QueuedIterator<KvEntry>> {
    const iterator = await this.#kv.watch({
      key: siteFilter(this.#site),
      ignoreDeletes: true,
      initializedFn: initialized,
      ...(this.#revision > 0 ? { resumeFromRevision: this.#revision + 1 } : {}),
    });
    this.#watch = iterator;
    return iterator;
  }

  #deliver(entry: KvEntry, handlers: WatchHandlers): void {
    this.#revision = Math.max(this.#revision, entry.revision);
    if (entry.operation !== 'PUT') return;
    const identity = identityOfKey(this.#site, entry.key);
    if (identity === undefined) return handlers.onInvalid(entry.key, 'the key names no node of this site');
    const why = whyNotIdentity(identity);
    if (why !== undefined) return handlers.onRefusedIdentity(identity, why);
    // one key a node: an identity written another way (an earlier version's `=` form) is not its key
    if (historyKey(this.#site, identity) !== entry.key)
      return handlers.onInvalid(entry.key, `not the key of ${identity}`);
    let record: NodeRecord;
    try {
      record = decodeRecord(entry.value);
    } catch (err) {
      return handlers.onInvalid(entry.key, errorText(err));
    }
    if (record.identity !== identity)
      return handlers.onInvalid(entry.key, `the record names ${JSON.stringify(record.identity)}`);
    handlers.onRecord(record, entry.revision);
  }

  close(): void {
    this.#closed = true;
    this.#watch?.stop();
  }
}

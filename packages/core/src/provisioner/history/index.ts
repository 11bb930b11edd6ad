export {
  NodeHistory,
  HistoryWriteRefusedError,
  DEFAULT_HISTORY_CAPACITY,
  PROMPT_WRITE_MS,
  UNSTEADY_HOLD_MS,
  type AttemptReport,
  type SendingOptions,
  type SendingRecord,
  type HistoryBacking,
  type Deferral,
  type NodeHistoryOptions,
} from './node-history.js';
export {
  HistoryBucket,
  HistoryUnavailableError,
  HISTORY_BUCKET_MAX_BYTES,
  HISTORY_MAX_VALUE_BYTES,
  type HistoryBucketInfo,
  type HistoryBucketOptions,
  type WatchHandlers,
  type SiteRecordBacking,
} from './bucket.js';
export {
  SharedRecords,
  RevisionConflictError,
  type StoredVersion,
  type SharedBacking,
  type RecordChange,
  type ChangeEnd,
  type ChangeHandle,
} from './shared-records.js';
export {
  decodeRecord,
  encodeRecord,
  boundedError,
  HistoryRecordError,
  MAX_ERROR_CHARS,
  RECORD_FORMAT,
  isRenewing,
  type NodeRecord,
} from './record.js';
export { historyKey, identityOfKey, siteFilter, siteToken, siteRecordKey } from './keys.js';
export { backoffAfter, quarantines, type SetbackPolicy } from './backoff-policy.js';
export {
  HistorySync,
  type HistoryConnectionKind,
  type HistoryConnection,
  type HistoryStatus,
  type HistorySyncOptions,
} from './history-sync.js';

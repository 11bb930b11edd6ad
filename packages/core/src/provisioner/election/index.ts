// Leader election over the Choria Streams KV bucket.
export { LeaderElection, type CampaignState, type ElectionState, type LeaderElectionOptions } from './election.js';
export {
  CHORIA_STREAMS_API_PREFIX,
  DEFAULT_ELECTION_BUCKET,
  DEFAULT_ELECTION_KEY,
  DEFAULT_KV_REQUEST_TIMEOUT_MS,
  ElectionKvError,
  PLAIN_JETSTREAM_API_PREFIX,
  bucketTtlMs,
  create,
  kvKeySubject,
  streamInfoSubject,
  update,
  type KvBucketRef,
  type KvFailureKind,
  type KvKeyRef,
} from './kv-campaign.js';
export { ELECTION_TTL_MAX_MS, ELECTION_TTL_MIN_MS, campaignIntervalMs, electionTtlProblem } from './ttl.js';

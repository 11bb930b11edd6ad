// The internals of @choria-provisioner/core, for the project's own packages, tests and
// benchmarks ('@choria-provisioner/core/internal'): wire builders, DDL data, security primitives,
// the election pieces. No stability promise; applications use the root export (index.ts).
export { VERSION } from './util/version.js';
export { ProvisionerError } from './util/errors.js';

// configuration
export * from './config/index.js';
export { parseDuration, formatDuration, DurationError } from './util/duration.js';

// logging, pause, small utilities
export { createLogger, silentLogger, winstonLevel, type Logger, type LoggerOptions } from './util/logger.js';
export { PauseFlag, type PauseListener } from './util/pause.js';
export { CancelledError, isCancelled, type CancelReason } from './util/cancelled.js';
export { splitCommand, ShellSplitError } from './util/shellquote.js';
export { rpmVersionCompare, rpmVersionEqual, parseRpmVersion } from './util/rpmvercmp.js';
export { newRequestId, ksuid, ksuidTimestamp } from './util/ids.js';
export { FIVE_SEC, TWENTY_SEC, backoffDelay, sleep, type BackoffPolicy } from './util/backoff.js';
export { checkHelperCommand } from './host/helper/command-check.js';
export { ed25519KeyFromSeed, ed25519PublicHex, ed25519PublicKeyFromRaw, readEd25519SeedFile } from './util/ed25519.js';
export { decodeHexStrict } from './util/go-hex.js';
export { visibleText, visibleStrings } from './util/visible-text.js';
export { goJsonStringify, type GoJsonValue } from './util/go-json.js';

// metrics
export * from './metrics/index.js';
export { collectDefaultMetrics } from 'prom-client';

// the Choria client
export * from './choria/index.js';
// both layers name the collective; they agree on the value
export { PROVISIONING_COLLECTIVE } from './config/index.js';

// one server's provisioning
export * from './host/helper/index.js';
export {
  loadSigningKey,
  loadVerificationKey,
  verifyProvisioningToken,
  verifyProvisioningTokenWithKey,
  claimsForHelper,
  ProvisioningTokenError,
  mintServerToken,
  SigningKeyCache,
  parseServerClaims,
  ServerClaimsError,
  verifyNonceSignature,
  encryptKeyForNode,
  decryptLegacyPem,
  validateCsr,
  compileDenyList,
  matchesDenyList,
  type ProvisioningClaims,
  type MintServerTokenInput,
  type ServerClaimsInput,
  type SigningKey,
  type VerificationKey,
} from './host/security/index.js';
export { Host, createHostRunner, type HostDeps, type HostRunnerSettings } from './host/host.js';
export { LockedElsewhereError, StepFailedError } from './host/step.js';
export { testHelper, parseSavedRequest, type HelperTestInput, type HelperTestReport } from './host/helper-test.js';
export { NODE_FEATURE_RELEASES, NodeReleaseError, type NodeFeature } from './host/node-release.js';

// the scheduler
export { Provisioner, type RetryAnswer } from './provisioner/provisioner.js';
export type { HostRunnerContext, ProvisionerOptions } from './provisioner/options.js';
export type { CoordinationStatus, ProvisionerStatus, SiteReadiness } from './provisioner/site-status.js';
export type { RenewalEntry, RenewalView } from './provisioner/renewal/renewer.js';
export type { RenewalState } from './provisioner/renewal/plan.js';
export type { HostStatus, NodePage } from './provisioner/node-listing.js';
export {
  NODE_SORT_KEYS,
  type ControlAction,
  type ControlRequest,
  type NodeQuery,
  type NodeSortKey,
  type StatusQuery,
} from './provisioner/queries.js';
export type { ThroughputSeries } from './provisioner/throughput.js';
export type { MembershipState, MembershipView, MemberView } from './provisioner/coordination/index.js';
export type { EffectiveCoordination } from './metrics/metrics.js';
export type { HostJob, HostResult, HostRunner, HostMetrics, Outcome, RpcName, LostReplyFinding } from './host/types.js';
export type { LostReplyTimings } from './host/lost-reply.js';
export { LifecycleWitness } from './host/lifecycle-witness.js';
export { OUTCOMES, OUTCOME_RULES, outcomeMeaning, type OutcomeMeaning, type OutcomeRule } from './host/types.js';
export { LeaderElection, type LeaderElectionOptions } from './provisioner/election/index.js';
export {
  NodeHistory,
  HistoryBucket,
  encodeRecord,
  decodeRecord,
  type HistoryStatus,
  type NodeRecord,
} from './provisioner/history/index.js';

// the monitor port: the HTTP API, its routes and control requests, the status page
export * from './monitor/index.js';

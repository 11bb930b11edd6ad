// The public API of @choria-provisioner/core, named one by one (docs/embedding.md describes each).
// Everything is re-exported from the internal API ('@choria-provisioner/core/internal'), so the
// public API is a part of it by construction; what is not named here has no stability promise.

export { VERSION } from './internal.js';
export { ProvisionerError } from './internal.js';

// Configuration: one site = the provisioner YAML + its Choria client configuration
export { loadSite, loadSiteChoria, parseSite, type LoadSiteOptions, type Site, type SiteText } from './internal.js';
export { loadProvisionerConfig, parseProvisionerConfig, type LoadOptions } from './internal.js';
export {
  applyProvisionerOverrides,
  checkChoriaSettings,
  loadChoriaConfig,
  parseChoriaConfig,
  type ChoriaLoadOptions,
} from './internal.js';
export { ConfigError, type ConfigProblem } from './internal.js';
export type {
  ChoriaSettings,
  CoordinationMode,
  FeatureFlags,
  HistoryStoreKind,
  LogLevel,
  ProvisionerConfig,
  RenewalSettings,
  SecurityProvider,
} from './internal.js';
export { DurationError, formatDuration, parseDuration } from './internal.js';

// Logging, and how text from outside is shown
export { createLogger, silentLogger, type Logger, type LoggerOptions } from './internal.js';
export { visibleStrings } from './internal.js';

// The scheduler of one site
export {
  Provisioner,
  type RetryAnswer,
  type CoordinationStatus,
  type HostStatus,
  type NodePage,
  type ProvisionerOptions,
  type ProvisionerStatus,
  type SiteReadiness,
} from './internal.js';
export type { HistoryStatus } from './internal.js';
export type { RenewalView } from './internal.js';
export type { MembershipState, MembershipView, MemberView } from './internal.js';
export { controlProvisioners, type ControlAction, type ControlAnswer, type ControlRequest } from './internal.js';
export { monitorRoutes, type MonitorRoutes } from './internal.js';
export type { ThroughputSeries } from './internal.js';
export type { EffectiveCoordination } from './internal.js';

// One server's provisioning, without a scheduler
export { Host, createHostRunner, type HostRunnerSettings } from './internal.js';
export { testHelper, parseSavedRequest, type HelperTestInput, type HelperTestReport } from './internal.js';
export { LockedElsewhereError, StepFailedError } from './internal.js';
export { NODE_FEATURE_RELEASES, NodeReleaseError, type NodeFeature } from './internal.js';
export {
  OUTCOMES,
  outcomeMeaning,
  type OutcomeMeaning,
  type HostJob,
  type HostMetrics,
  type HostResult,
  type HostRunner,
  type LostReplyFinding,
  type Outcome,
  type RpcName,
} from './internal.js';
export { PauseFlag, CancelledError, type CancelReason } from './internal.js';

// The site helper
export {
  createHelperRunner,
  parseHelperReply,
  validateHelperReply,
  HelperCommandError,
  HelperError,
  HelperReplyError,
  type HelperErrorKind,
  type HelperFunction,
  type HelperReply,
  type HelperRequest,
  type HelperResult,
  type HelperRunner,
  type HelperRunnerSpec,
  type HelperRunOptions,
} from './internal.js';
export { checkHelperCommand } from './internal.js';

// The Choria client
export {
  ChoriaClient,
  type ChoriaClientOptions,
  type ConnectClientOptions,
  type DiscoverOptions,
  type RpcOptions,
  type RpcReply,
} from './internal.js';
export {
  ChoriaError,
  ClientClosedError,
  ConnectError,
  ProtocolError,
  ProvisioningLockError,
  RpcAbortError,
  RpcError,
  RpcStatusError,
  RpcTimeoutError,
  SecurityError,
} from './internal.js';
export { selectProtocol } from './internal.js';
export type { LifecycleEvent, LifecycleType } from './internal.js';
export type { ProtocolVersion } from './internal.js';

// Key material of the provisioner (jwt_verify_cert, jwt_signing_key)
export { loadSigningKey, loadVerificationKey, type SigningKey, type VerificationKey } from './internal.js';

// Metrics and the monitor endpoint (/, /metrics, /status, /nodes)
export { ProvisionerMetrics, UPSTREAM_METRIC_NAMES } from './internal.js';
export {
  startMonitorServer,
  NODE_SORT_KEYS,
  type HealthReport,
  type MonitorServer,
  type MonitorServerOptions,
  type NodeQuery,
  type NodeSortKey,
  type StatusQuery,
} from './internal.js';

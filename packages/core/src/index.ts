// The public API of @choria-provisioner/core, named one by one (docs/embedding.md describes each).
// Everything else is internal and reached through '@choria-provisioner/core/internal'.

export { VERSION } from './util/version.js';
export { ProvisionerError } from './util/errors.js';

// Configuration: one site = the provisioner YAML + its Choria client configuration
export { loadSite, loadSiteChoria, parseSite, type LoadSiteOptions, type Site, type SiteText } from './config/site.js';
export { loadProvisionerConfig, parseProvisionerConfig, type LoadOptions } from './config/provisioner-config.js';
export { applyProvisionerOverrides, checkChoriaSettings, loadChoriaConfig, parseChoriaConfig, type ChoriaLoadOptions } from './config/choria-config.js';
export { ConfigError, type ConfigProblem } from './config/errors.js';
export type { ChoriaSettings, CoordinationMode, FeatureFlags, HistoryStoreKind, LogLevel, ProvisionerConfig, SecurityProvider } from './config/types.js';
export { DurationError, formatDuration, parseDuration } from './util/duration.js';

// Logging
export { createLogger, silentLogger, type Logger, type LoggerOptions } from './util/logger.js';

// The scheduler of one site
export { Provisioner, type CoordinationStatus, type HostStatus, type NodePage, type ProvisionerOptions, type ProvisionerStatus, type SiteReadiness } from './provisioner/provisioner.js';
export type { HistoryStatus } from './provisioner/history/index.js';
export type { MembershipState, MembershipView, MemberView } from './provisioner/coordination/index.js';
export { controlProvisioners, type ControlAction, type ControlAnswer, type ControlRequest } from './provisioner/control.js';
export { monitorRoutes, type MonitorRoutes } from './provisioner/monitor-routes.js';
export type { ThroughputSeries } from './provisioner/throughput.js';
export type { EffectiveCoordination } from './metrics/metrics.js';

// One server's provisioning, without a scheduler
export { Host, createHostRunner, type HostDeps } from './host/host.js';
export { testHelper, parseSavedRequest, type HelperTestInput, type HelperTestReport } from './host/helper-test.js';
export { LockedElsewhereError, StepFailedError } from './host/rpc-step.js';
export { NODE_FEATURE_RELEASES, NodeReleaseError, type NodeFeature } from './host/node-release.js';
export { OUTCOMES, OUTCOME_RULES, type OutcomeMeaning, type HostJob, type HostMetrics, type HostResult, type HostRunner, type LostReplyFinding, type Outcome, type RpcName } from './host/types.js';
export type { LostReplyTimings } from './host/lost-reply.js';
export { PauseFlag, PausedError } from './util/pause.js';

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
} from './host/helper/index.js';
export { checkHelperCommand } from './host/helper/command-check.js';

// The Choria client
export { ChoriaClient, type ChoriaClientOptions, type ConnectClientOptions, type DiscoverOptions, type RpcOptions, type RpcReply } from './choria/client.js';
export {
  ChoriaError,
  ClientClosedError,
  ConnectError,
  ProtocolError,
  ProvisioningLockError,
  RpcAbortError,
  RpcError,
  RpcReplyLostError,
  RpcStatusError,
  RpcTimeoutError,
  SecurityError,
} from './choria/errors.js';
export { selectProtocol } from './choria/security/select.js';
export type { LifecycleEvent, LifecycleType } from './choria/lifecycle.js';
export type { ProtocolVersion } from './choria/protocol/types.js';

// Key material of the provisioner (jwt_verify_cert, jwt_signing_key) and Choria ids
export { loadSigningKey, loadVerificationKey, type SigningKey, type VerificationKey } from './host/security/index.js';
export { ksuid } from './util/ids.js';

// Metrics and the monitor endpoint (/, /metrics, /status, /nodes)
export { ProvisionerMetrics, Registry, UPSTREAM_METRIC_NAMES } from './metrics/metrics.js';
export { startMonitorServer, NODE_SORT_KEYS, type HealthReport, type MonitorServer, type MonitorServerOptions, type NodeQuery, type NodeSortKey, type StatusQuery } from './metrics/http.js';
export { collectDefaultMetrics } from 'prom-client';

// Public API of @choria-provisioner/simulator.
export { SimulatedFleet, type ReportOptions } from './fleet.js';
export {
  SimulatedNode,
  AGENT_DEADLINES_MS,
  type NodeLifecycleState,
  type NodeSettings,
  type NodeStats,
} from './node.js';
export {
  resolveFleetOptions,
  identityFor,
  type FleetOptions,
  type FleetJwtOptions,
  type FleetProtocol,
  type ConfigFileKind,
  type ConfigFileOption,
  type FactsOption,
  type VersionOption,
  type ReplyHook,
  type ReplyInfo,
} from './options.js';
export { type FleetReport, type FleetSummary, type FleetTotals, type NodeReport, NODE_STATES } from './report.js';
export { VIOLATION_KINDS, type Violation, type ViolationKind } from './violations.js';
export { attachControl, controlSubjects, parseReportRequest, type ReportRequest } from './control.js';
export { buildLifecycleEvent, type EventFormat, type LifecycleEventType } from './events.js';
export type { SimulatorLogger } from './logger.js';
export type { ServerJwtVerification } from './crypto/server-jwt.js';
export { decodeRequest, applyPayloadBase64Tolerance, PROTOCOL } from './wire/decode.js';
export { encodeReply, type ReplyParams } from './wire/encode.js';
export { createValidators, type ProtocolValidators } from './wire/validate.js';
export type { DecodedRequest, ProtocolVersion, RequestFilter } from './wire/types.js';
export { parseSimulatorArgs, parseDurationMs } from './cli-args.js';
export { startWatchdog, DEFAULT_WATCHDOG_S, type Watchdog, type WatchdogOptions } from './watchdog.js';

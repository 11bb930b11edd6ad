// The real-Choria interop lab (docs/interop.md): prebuilt go-choria binaries, a real broker,
// real servers, this project's provisioner and the upstream one.
export { labAvailability, labPaths, UPGRADE_VERSION, type LabPaths } from './paths.js';
export { writeUpgradeRepository } from './upgrades.js';
export {
  openLab,
  labServers,
  labJwtServers,
  provisionedIdentities,
  provisionedStates,
  waitProvisioned,
  reportLine,
  type Lab,
  type FleetSpec,
  type ProvisionedReport,
} from './lab.js';
export type { LabBroker } from './broker.js';
export type { LabFleet, ServerState } from './servers.js';
export type { LabProvisioner, ProvisionerKind, SiteSpec } from './provisioners.js';
export {
  withLab,
  interopSuite,
  labKinds,
  rowBound,
  recordResult,
  appendResult,
  assertRow,
  settleRow,
  siteHistory,
  waitWaiting,
  waitLog,
  type SiteHistoryStatus,
} from './rows.js';
export {
  labVariants,
  restartMidFlow,
  rowCases,
  RESTART_DOWN_MS,
  type MidFlowRestart,
  type RestartReport,
  type RowCase,
  type RowVariant,
} from './variants.js';
export {
  writeKeyPair,
  writeOperatorClientJwt,
  writeProvisionerClientJwt,
  writeServerJwt,
  type LabKeyPair,
} from './jwt.js';
export { createBucketAsAdmin, writeIssuerClientConfig } from './streams.js';
export { pauseProcess, startTcpRelay, type TcpRelay } from './faults.js';
export { issuerNetwork, type IssuerNetwork } from './issuer-network.js';

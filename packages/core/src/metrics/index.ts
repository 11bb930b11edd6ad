export { ProvisionerMetrics, UPSTREAM_METRIC_NAMES, OUTCOMES, Registry } from './metrics.js';
export type { RpcName, Outcome } from './metrics.js';
export { startMonitorServer } from './http.js';
export type { MonitorServer, MonitorServerOptions } from './http.js';

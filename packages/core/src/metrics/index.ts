export { ProvisionerMetrics, UPSTREAM_METRIC_NAMES, Registry } from './metrics.js';
export { startMonitorServer } from './http.js';
export type { MonitorServer, MonitorServerOptions } from './http.js';

export { ProvisionerMetrics, UPSTREAM_METRIC_NAMES, Registry } from './metrics.js';

export { startMonitorServer, type HealthReport, type MonitorServer, type MonitorServerOptions } from './http.js';
export { monitorRoutes, type MonitorRoutes } from './routes.js';
export { controlProvisioners, type ControlAnswer } from './control.js';

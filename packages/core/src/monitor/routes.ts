// What the monitor port serves for the provisioners of one process: /status (every site), /nodes
// (one page of one site's nodes, for the status page), /readyz and the control requests. The CLI,
// the demo and an embedding application pass the same routes to startMonitorServer. A site that
// sets monitor_api_token lists its nodes (in /status and /nodes) only to requests presenting it;
// its counts, /metrics, /healthz and /readyz stay open.
import type { NodeQuery } from '../provisioner/queries.js';
import type { Provisioner } from '../provisioner/provisioner.js';
import { controlProvisioners, nodesVisible } from './control.js';
import type { MonitorServerOptions } from './http.js';

export type MonitorRoutes = Required<
  Pick<MonitorServerOptions, 'status' | 'nodes' | 'control' | 'ready' | 'allowedHosts'>
>;

/** The routes of `provisioners`, each a site (the first one is the status page's default). */
export function monitorRoutes(provisioners: readonly Provisioner[]): MonitorRoutes {
  return {
    // a site with monitor_api_token counts its nodes for anyone, and lists them only to its token
    status: (query) => ({
      sites: provisioners.map((p) =>
        nodesVisible(p, query.token) ? p.status(query) : { ...p.status({ limit: 0 }), hostsNeedToken: true as const },
      ),
    }),
    nodes: (query: NodeQuery) => {
      const p = query.site === undefined ? provisioners[0] : provisioners.find((x) => x.config.site === query.site);
      if (p === undefined) {
        const known = provisioners.map((x) => JSON.stringify(x.config.site)).join(', ');
        return {
          status: 404,
          body: {
            error: `no site ${JSON.stringify(query.site ?? '')} here; the sites are ${known === '' ? 'none' : known}`,
          },
        };
      }
      if (!nodesVisible(p, query.token)) {
        const site = p.config.site === '' ? 'this site' : `site ${JSON.stringify(p.config.site)}`;
        return {
          status: 401,
          body: {
            error:
              `the nodes of ${site} are listed only with its monitor_api_token ` +
              `(Authorization: Bearer <monitor_api_token>)`,
          },
        };
      }
      return { status: 200, body: p.nodes(query) };
    },
    control: (req) => controlProvisioners(provisioners, req),
    ready: () => {
      const sites = provisioners.map((p) => p.readiness());
      return { ready: sites.every((r) => r.ready), sites };
    },
    // the port shows every site's nodes: it answers to every name any site lists
    allowedHosts: [...new Set(provisioners.flatMap((p) => p.config.monitorAllowedHosts))],
  };
}

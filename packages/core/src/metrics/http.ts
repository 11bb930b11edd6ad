// The monitoring endpoint: /metrics (Prometheus text) and /status (JSON) on one port. Several
// provisioner instances share one server and one registry.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { errorText } from '../util/values.js';

export interface MonitorServerOptions {
  port: number;
  /** default "0.0.0.0" like upstream; tests use 127.0.0.1 */
  host?: string;
  registry: Registry;
  /** JSON served at /status */
  status?: () => unknown;
}

export interface MonitorServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export async function startMonitorServer(opts: MonitorServerOptions): Promise<MonitorServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      opts.registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': opts.registry.contentType });
          res.end(text);
        })
        .catch((err: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`could not render metrics: ${errorText(err)}\n`);
        });
      return;
    }
    if (path === '/status' && opts.status !== undefined) {
      let body: string;
      try {
        body = JSON.stringify(opts.status(), null, 2);
      } catch (err) {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`could not render status: ${errorText(err)}\n`);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body + '\n');
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found: try /metrics or /status\n');
  });
  const host = opts.host ?? '0.0.0.0';
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`could not listen for monitoring on ${host}:${opts.port}: ${err.code ?? err.message}`)),
    );
    server.listen(opts.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

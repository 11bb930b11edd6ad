// The monitor port: the status page (/), /metrics (Prometheus text), /status and /nodes (JSON),
// /healthz, /readyz and the control requests on one port. Several provisioner instances share one
// server and one registry; this file is the HTTP transport, routes.ts says what each route asks
// of them.
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import { errorText } from '../util/values.js';
import {
  MAX_NODE_PAGE,
  NODE_SORT_KEYS,
  type ControlAction,
  type ControlRequest,
  type NodeQuery,
  type NodeSortKey,
  type StatusQuery,
} from '../provisioner/queries.js';
import { STATUS_PAGE_CSP, STATUS_PAGE_HTML } from './status-page/page.js';
import { visibleText } from '../util/visible-text.js';
import { hostCheck } from './host-check.js';

export interface MonitorServerOptions {
  port: number;
  /** default "0.0.0.0" like upstream; tests use 127.0.0.1 */
  host?: string;
  registry: Registry;
  /**
   * JSON served at /status (`?limit=N`: describe at most N nodes a site; `token`: the bearer token presented, if any)
   */
  status?: (query: StatusQuery) => unknown;
  /**
   * /nodes: one page of one site's nodes (the status page's table), with the
   * bearer token presented, if any; with `status` it enables the page at /
   */
  nodes?: (query: NodeQuery) => { status: number; body: unknown };
  /** /readyz: 200 when `ready`, else 503; `sites` is served as the reason */
  ready?: () => { ready: boolean; sites: unknown };
  /** /healthz answers 503 when the event loop stalled longer than this since the previous check (default 10 s) */
  stallLimitMs?: number;
  /** serve HTTPS with this certificate chain and key (PEM text) instead of plain HTTP */
  tls?: { cert: string; key: string };
  /** POST /pause, /resume, /renewals/resume, /nodes/<identity>/release or /retry (see controlProvisioners) */
  control?: (req: ControlRequest) => { status: number; body: unknown };
  /**
   * Names besides IP literals, `localhost` and `host` that a request's Host header may name to be
   * shown the status page, /status and /nodes or to send a control request (host-check.ts)
   */
  allowedHosts?: readonly string[];
}

/** A /status or /nodes query parameter that is out of range or unknown; the message names it. */
export class QueryError extends Error {}

function intParam(params: URLSearchParams, name: string, fallback: number, min: number, max: number): number {
  const text = params.get(name);
  if (text === null || text === '') return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min || n > max)
    throw new QueryError(`${name} ${JSON.stringify(text)} must be a whole number from ${min} to ${max}`);
  return n;
}

function textParam(params: URLSearchParams, name: string, maxLength: number): string | undefined {
  const text = params.get(name);
  if (text === null || text === '') return undefined;
  if (text.length > maxLength) throw new QueryError(`${name} is longer than ${maxLength} characters`);
  return text;
}

/** Parses the /nodes query; throws QueryError naming the bad parameter. */
export function parseNodeQuery(params: URLSearchParams): NodeQuery {
  const sort = params.get('sort') ?? 'identity';
  if (!(NODE_SORT_KEYS as readonly string[]).includes(sort))
    throw new QueryError(`sort ${JSON.stringify(sort)} must be one of ${NODE_SORT_KEYS.join(', ')}`);
  const order = params.get('order') ?? 'asc';
  if (order !== 'asc' && order !== 'desc') throw new QueryError(`order ${JSON.stringify(order)} must be asc or desc`);
  const site = params.get('site');
  const state = textParam(params, 'state', 64);
  const search = textParam(params, 'search', 256);
  return {
    ...(site !== null ? { site } : {}),
    ...(state !== undefined ? { state } : {}),
    ...(search !== undefined ? { search } : {}),
    sort: sort as NodeSortKey,
    order,
    offset: intParam(params, 'offset', 0, 0, 10_000_000),
    limit: intParam(params, 'limit', 100, 1, MAX_NODE_PAGE),
  };
}

/** The token of an `Authorization: Bearer <token>` header, if there is one. */
function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1]?.trim();
}

/** The control routes: POST path -> action and node (the node's identity is checked by controlProvisioners). */
export function parseControlPath(path: string): { action: ControlAction; identity?: string } | undefined {
  if (path === '/pause' || path === '/resume') return { action: path.slice(1) as 'pause' | 'resume' };
  if (path === '/renewals/resume') return { action: 'resume-renewals' };
  const m = /^\/nodes\/([^/]+)\/(release|retry)$/.exec(path);
  if (m === null) return undefined;
  let identity: string;
  try {
    identity = decodeURIComponent(m[1] as string);
  } catch {
    return undefined;
  }
  return { action: m[2] as 'release' | 'retry', identity };
}

/** The /healthz answer: the process answers, and how late its event loop ran since the last check. */
export interface HealthReport {
  status: 'ok' | 'stalled';
  /** event-loop delay since the previous /healthz (or the start), in ms */
  eventLoopDelayP99Ms: number;
  eventLoopDelayMaxMs: number;
  uptimeS: number;
}

const DEFAULT_STALL_LIMIT_MS = 10_000;

/**
 * What shows nodes or changes the site: answered only to a known Host (host-check.ts); POSTs are all control requests.
 */
const SHOWS_NODES: ReadonlySet<string> = new Set(['/', '/status', '/nodes']);

// every text served is shown through visibleText: it may hold what a node sent
const visible = (_key: string, value: unknown): unknown => (typeof value === 'string' ? visibleText(value) : value);

/** Answers `body` as indented JSON; throws (before anything is written) when it cannot be rendered. */
function json(res: ServerResponse, code: number, body: unknown): void {
  const text = `${JSON.stringify(body, visible, 2)}\n`;
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(text);
}

export interface MonitorServer {
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export async function startMonitorServer(opts: MonitorServerOptions): Promise<MonitorServer> {
  // a histogram of how late timers run, read (and reset) by each /healthz
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const server = createMonitorServer(opts, monitorRequestHandler(opts, loopDelay));
  const host = opts.host ?? '0.0.0.0';
  await listen(server, opts.port, host);
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `${opts.tls === undefined ? 'http' : 'https'}://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        loopDelay.disable();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An HTTP server, or an HTTPS one with `opts.tls`; throws, naming the port, when the certificate or key is refused. */
function createMonitorServer(opts: MonitorServerOptions, handler: RequestListener): Server {
  try {
    return opts.tls === undefined
      ? createServer(handler)
      : createTlsServer({ cert: opts.tls.cert, key: opts.tls.key }, handler);
  } catch (err) {
    throw new Error(`could not set up TLS for monitoring on port ${opts.port}: ${errorText(err)}`, { cause: err });
  }
}

/** Resolves once `server` listens on `host`:`port`; rejects, naming them, when it cannot. */
function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`could not listen for monitoring on ${host}:${port}: ${err.code ?? err.message}`)),
    );
    server.listen(port, host, () => resolve());
  });
}

/**
 * Answers every request to the monitor port: a request that shows nodes or changes the site only to a
 * known Host, POSTs as control requests, GET and HEAD by path, any other method 405.
 */
function monitorRequestHandler(opts: MonitorServerOptions, loopDelay: ELDHistogram): RequestListener {
  const stallLimitMs = opts.stallLimitMs ?? DEFAULT_STALL_LIMIT_MS;
  const knownHost = hostCheck({ bindAddress: opts.host ?? '0.0.0.0', allowed: opts.allowedHosts });
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://monitor');
    const path = url.pathname;
    const token = bearerToken(req.headers.authorization);
    if ((req.method === 'POST' || SHOWS_NODES.has(path)) && !knownHost(req.headers.host)) {
      refuseUnknownHost(req, res, path);
    } else if (req.method === 'POST') {
      answerControl(req, res, url, token, opts.control);
    } else if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD, POST' }).end();
    } else if (path === '/metrics') {
      answerMetrics(res, opts.registry);
    } else if (path === '/healthz') {
      answerHealth(res, loopDelay, stallLimitMs);
    } else if (path === '/readyz' && opts.ready !== undefined) {
      answerReady(res, opts.ready);
    } else if (path === '/status' && opts.status !== undefined) {
      answerStatus(res, url.searchParams, token, opts.status);
    } else if (path === '/nodes' && opts.nodes !== undefined) {
      answerNodes(res, url.searchParams, token, opts.nodes);
    } else if (path === '/' && opts.status !== undefined && opts.nodes !== undefined) {
      answerStatusPage(res, req.method === 'HEAD');
    } else {
      answerNotFound(res, opts.nodes !== undefined);
    }
  };
}

/** 403 to a request that shows nodes or changes the site, sent with a Host header the port is not known by. */
function refuseUnknownHost(req: IncomingMessage, res: ServerResponse, path: string): void {
  req.resume();
  json(res, 403, {
    error:
      `this port answers ${path} only to a Host it is known by: ` +
      `an IP address, localhost, its bind address or a name in monitor_allowed_hosts`,
  });
}

/** A POST: the control request its path names, with the `site` parameter and the bearer token when given; or 404. */
function answerControl(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  token: string | undefined,
  control: MonitorServerOptions['control'],
): void {
  const route = parseControlPath(url.pathname);
  if (route === undefined || control === undefined) {
    json(res, 404, {
      error: 'not found: POST /pause, /resume, /renewals/resume, /nodes/<identity>/release or /nodes/<identity>/retry',
    });
    return;
  }
  const site = url.searchParams.get('site');
  // the request body is not used; drain it so the connection can be reused
  req.resume();
  const answer = control({
    ...route,
    ...(site !== null ? { site } : {}),
    ...(token !== undefined ? { token } : {}),
  });
  json(res, answer.status, answer.body);
}

/** /metrics: the registry in Prometheus text format, or 500 saying why it could not be rendered. */
function answerMetrics(res: ServerResponse, registry: Registry): void {
  registry
    .metrics()
    .then((text) => {
      res.writeHead(200, { 'content-type': registry.contentType });
      res.end(text);
    })
    .catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`could not render metrics: ${errorText(err)}\n`);
    });
}

/** /healthz: how late the event loop ran since the previous check (which starts a new measure); 503 when stalled. */
function answerHealth(res: ServerResponse, loopDelay: ELDHistogram, stallLimitMs: number): void {
  const maxMs = loopDelay.max / 1e6;
  const report: HealthReport = {
    status: maxMs > stallLimitMs ? 'stalled' : 'ok',
    eventLoopDelayP99Ms: Math.round(loopDelay.percentile(99) / 1e4) / 100,
    eventLoopDelayMaxMs: Math.round(maxMs * 100) / 100,
    uptimeS: Math.round(process.uptime()),
  };
  loopDelay.reset();
  json(res, report.status === 'ok' ? 200 : 503, report);
}

/** /readyz: 200 when ready, else 503, with the sites as the reason; 500 when asking failed. */
function answerReady(res: ServerResponse, ready: NonNullable<MonitorServerOptions['ready']>): void {
  let r: { ready: boolean; sites: unknown };
  try {
    r = ready();
  } catch (err) {
    json(res, 500, { ready: false, error: errorText(err) });
    return;
  }
  json(res, r.ready ? 200 : 503, r);
}

/** /status: the sites (`?limit=N`: at most N nodes described a site); 400 for a bad limit, 500 when not rendered. */
function answerStatus(
  res: ServerResponse,
  params: URLSearchParams,
  token: string | undefined,
  status: NonNullable<MonitorServerOptions['status']>,
): void {
  let query: StatusQuery;
  try {
    const limit = params.has('limit') ? intParam(params, 'limit', 1000, 0, 1_000_000) : undefined;
    query = { ...(limit !== undefined ? { limit } : {}), ...(token !== undefined ? { token } : {}) };
  } catch (err) {
    json(res, 400, { error: errorText(err) });
    return;
  }
  try {
    json(res, 200, status(query));
  } catch (err) {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`could not render status: ${errorText(err)}\n`);
  }
}

/** /nodes: one page of one site's nodes; 400 for a bad query, 500 when they cannot be listed. */
function answerNodes(
  res: ServerResponse,
  params: URLSearchParams,
  token: string | undefined,
  nodes: NonNullable<MonitorServerOptions['nodes']>,
): void {
  let query: NodeQuery;
  try {
    query = parseNodeQuery(params);
    if (token !== undefined) query = { ...query, token };
  } catch (err) {
    json(res, 400, { error: errorText(err) });
    return;
  }
  try {
    const answer = nodes(query);
    json(res, answer.status, answer.body);
  } catch (err) {
    json(res, 500, { error: `could not list the nodes: ${errorText(err)}` });
  }
}

/** /: the status page, under a policy that runs only its own script and style (page.ts); HEAD gets the headers only. */
function answerStatusPage(res: ServerResponse, headOnly: boolean): void {
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': STATUS_PAGE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
  });
  res.end(headOnly ? undefined : STATUS_PAGE_HTML);
}

/** 404 naming the paths this port serves (the status page and /nodes only when `withNodes`). */
function answerNotFound(res: ServerResponse, withNodes: boolean): void {
  res.writeHead(404, { 'content-type': 'text/plain' });
  res.end(
    `not found: try ${withNodes ? '/ (the status page), ' : ''}/metrics, /status, ` +
      `${withNodes ? '/nodes, ' : ''}/healthz or /readyz\n`,
  );
}

import { createHash } from 'node:crypto';
import { request } from 'node:https';
import { request as httpRequest } from 'node:http';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestPki } from '@choria-provisioner/test-support/tls';
import { ProvisionerMetrics, Registry } from '../../src/metrics/index.js';
import { startMonitorServer, type MonitorServer } from '../../src/monitor/index.js';

describe('startMonitorServer', () => {
  let srv: MonitorServer | undefined;
  afterEach(async () => {
    await srv?.close();
    srv = undefined;
  });

  /** GET or POST `path` naming `host` in the Host header (fetch cannot set Host). */
  function ask(
    port: number,
    path: string,
    host: string | undefined,
    method = 'GET',
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = host === undefined ? {} : { host };
      const req = httpRequest(
        { host: '127.0.0.1', port, path, method, headers, setHost: host !== undefined },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  it('shows nodes and takes control requests only under a Host it is known by (DNS rebinding)', async () => {
    const secret = 'node-with-a-secret-name.example.net';
    const controls: unknown[] = [];
    srv = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      allowedHosts: ['prov1.example.net'],
      status: () => ({ sites: [{ hosts: [{ identity: secret }] }] }),
      nodes: () => ({ status: 200, body: { nodes: [{ identity: secret }] } }),
      ready: () => ({ ready: true, sites: [] }),
      control: (req) => (controls.push(req), { status: 200, body: { sites: [] } }),
    });
    const port = srv.port;
    for (const path of ['/', '/status', '/nodes']) {
      for (const host of ['attacker.example:' + port, 'attacker.example', 'localhost.attacker.example']) {
        const r = await ask(port, path, host);
        expect(r.status, `${path} as ${host}`).toBe(403);
        expect(r.body).not.toContain(secret);
        expect(r.body).not.toContain('attacker');
      }
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, 'prov1.example.net', `[::1]:${port}`]) {
        const r = await ask(port, path, host);
        expect(r.status, `${path} as ${host}`).toBe(200);
      }
    }
    expect((await ask(port, '/status', `127.0.0.1:${port}`)).body).toContain(secret);
    expect((await ask(port, '/pause', 'attacker.example', 'POST')).status).toBe(403);
    expect((await ask(port, '/nodes/n1/retry', 'attacker.example', 'POST')).status).toBe(403);
    expect(controls).toHaveLength(0);
    expect((await ask(port, '/pause', `localhost:${port}`, 'POST')).status).toBe(200);
    expect(controls).toHaveLength(1);
    // what shows no node stays open to any Host: Prometheus and orchestrators use names of their own
    for (const path of ['/metrics', '/healthz', '/readyz'])
      expect((await ask(port, path, 'scraper.example')).status).toBe(200);
  });

  it('serves every text with visible escapes for control characters', async () => {
    srv = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      status: () => ({ msg: 'a\u001b[2J\u0007b\n\u009b' }),
    });
    const raw = await (await fetch(`${srv.url}/status`)).text();
    expect(raw).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(JSON.parse(raw)).toEqual({ msg: 'a\\u001b[2J\\u0007b\\u000a\\u009b' });
  });

  it('serves /metrics and /status and 404s elsewhere', async () => {
    const registry = new Registry();
    new ProvisionerMetrics(registry, 'x').discoverCycle();
    srv = await startMonitorServer({ port: 0, host: '127.0.0.1', registry, status: () => ({ ok: true }) });
    const m = await fetch(`${srv.url}/metrics`);
    expect(m.status).toBe(200);
    expect(await m.text()).toContain('choria_provisioner_discover_cycles{site="x"} 1');
    const s = await fetch(`${srv.url}/status`);
    expect(await s.json()).toEqual({ ok: true });
    expect((await fetch(`${srv.url}/nope`)).status).toBe(404);
  });

  it('serves the status page at / with a policy that runs only its own script, and parses /status and /nodes queries', async () => {
    const seen: unknown[] = [];
    srv = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      status: (q) => (seen.push(q), { sites: [] }),
      nodes: (q) => (seen.push(q), { status: 200, body: { nodes: [] } }),
    });
    const page = await fetch(`${srv.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(
      /default-src 'none'; script-src 'sha256-[A-Za-z0-9+/=]+'; style-src 'sha256-[A-Za-z0-9+/=]+'; connect-src 'self'/,
    );
    const html = await page.text();
    const script = /<script>([\s\S]*)<\/script>/.exec(html)?.[1] ?? '';
    expect(csp).toContain(`'sha256-${createHash('sha256').update(script).digest('base64')}'`);
    // the page builds its DOM with textContent only: nothing a node said is ever parsed as HTML
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
    expect(html).not.toMatch(/<script src|<link /);
    // the inline script parses (a quoting slip in the template would only show in a browser)
    expect(() => new Function(script)).not.toThrow();

    await fetch(`${srv.url}/status?limit=0`);
    await fetch(`${srv.url}/nodes?site=lon&state=failed&search=web&sort=attempts&order=desc&offset=100&limit=50`);
    await fetch(`${srv.url}/nodes`);
    // the bearer token goes with the query: the routes decide what it may see
    const auth = { authorization: 'Bearer t0k' };
    await fetch(`${srv.url}/status`, { headers: auth });
    await fetch(`${srv.url}/nodes`, { headers: auth });
    expect(seen).toEqual([
      { limit: 0 },
      { site: 'lon', state: 'failed', search: 'web', sort: 'attempts', order: 'desc', offset: 100, limit: 50 },
      { sort: 'identity', order: 'asc', offset: 0, limit: 100 },
      { token: 't0k' },
      { sort: 'identity', order: 'asc', offset: 0, limit: 100, token: 't0k' },
    ]);
    const bad = async (query: string): Promise<string> => {
      const r = await fetch(`${srv?.url ?? ''}${query}`);
      expect(r.status, query).toBe(400);
      return ((await r.json()) as { error: string }).error;
    };
    expect(await bad('/nodes?sort=colour')).toBe(
      'sort "colour" must be one of identity, state, step, attempts, lastError, nextAttemptAt, updatedAt',
    );
    expect(await bad('/nodes?order=up')).toBe('order "up" must be asc or desc');
    expect(await bad('/nodes?limit=501')).toBe('limit "501" must be a whole number from 1 to 500');
    expect(await bad('/nodes?offset=-1')).toBe('offset "-1" must be a whole number from 0 to 10000000');
    expect(await bad(`/nodes?search=${'x'.repeat(300)}`)).toBe('search is longer than 256 characters');
    expect(await bad('/status?limit=lots')).toBe('limit "lots" must be a whole number from 0 to 1000000');
    expect(seen).toHaveLength(5);
  });

  it('serves no page without a nodes route (an embedder that serves only /status)', async () => {
    srv = await startMonitorServer({ port: 0, host: '127.0.0.1', registry: new Registry(), status: () => ({}) });
    const r = await fetch(`${srv.url}/`);
    expect(r.status).toBe(404);
    expect(await r.text()).toBe('not found: try /metrics, /status, /healthz or /readyz\n');
  });

  it('/healthz answers while the event loop runs, 503 after a stall longer than the limit, then recovers', async () => {
    srv = await startMonitorServer({ port: 0, host: '127.0.0.1', registry: new Registry(), stallLimitMs: 300 });
    const first = await fetch(`${srv.url}/healthz`);
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ status: 'ok', uptimeS: expect.any(Number) });
    // the event loop stands still for 600 ms
    await new Promise((r) => setTimeout(r, 50));
    const until = Date.now() + 600;
    while (Date.now() < until) {
      // busy
    }
    await new Promise((r) => setTimeout(r, 50));
    const stalled = await fetch(`${srv.url}/healthz`);
    expect(stalled.status).toBe(503);
    const body = (await stalled.json()) as { status: string; eventLoopDelayMaxMs: number };
    expect(body.status).toBe('stalled');
    expect(body.eventLoopDelayMaxMs).toBeGreaterThan(300);
    // each check reports the time since the previous one
    expect((await fetch(`${srv.url}/healthz`)).status).toBe(200);
  });

  it('/readyz is 200 when every site is ready and 503 with the reasons otherwise', async () => {
    let ready = false;
    srv = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      ready: () => ({
        ready,
        sites: [{ site: 'lon', ready, reason: ready ? 'ready' : 'standby: another instance leads the election' }],
      }),
    });
    const no = await fetch(`${srv.url}/readyz`);
    expect(no.status).toBe(503);
    expect(await no.json()).toEqual({
      ready: false,
      sites: [{ site: 'lon', ready: false, reason: 'standby: another instance leads the election' }],
    });
    ready = true;
    expect((await fetch(`${srv.url}/readyz`)).status).toBe(200);
  });

  it('serves HTTPS with the configured certificate, and nothing over plain HTTP', async () => {
    const pki = await createTestPki([]);
    const registry = new Registry();
    new ProvisionerMetrics(registry, 'tls').discoverCycle();
    srv = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      tls: { cert: pki.server.certPem, key: readFileSync(pki.server.keyFile, 'utf8') },
    });
    expect(srv.url).toBe(`https://127.0.0.1:${srv.port}`);
    const body = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(`${srv!.url}/metrics`, { ca: readFileSync(pki.caFile) }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(body.status).toBe(200);
    expect(body.text).toContain('choria_provisioner_discover_cycles{site="tls"} 1');
    await expect(fetch(`http://127.0.0.1:${srv.port}/metrics`)).rejects.toThrow();
    // an unknown CA is refused by the client
    await expect(fetch(`${srv.url}/metrics`)).rejects.toThrow();
  });

  it('names a broken key pair in the error', async () => {
    await expect(
      startMonitorServer({
        port: 0,
        host: '127.0.0.1',
        registry: new Registry(),
        tls: { cert: 'not a cert', key: 'not a key' },
      }),
    ).rejects.toThrow(/^could not set up TLS for monitoring on port 0: /);
  });

  it('fails clearly when the port is taken', async () => {
    const registry = new Registry();
    srv = await startMonitorServer({ port: 0, host: '127.0.0.1', registry });
    await expect(startMonitorServer({ port: srv.port, host: '127.0.0.1', registry })).rejects.toThrow(
      `could not listen for monitoring on 127.0.0.1:${srv.port}: EADDRINUSE`,
    );
  });
});

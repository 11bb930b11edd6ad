// The monitor port's control requests against real Provisioners: refused without a configured
// token, refused with a wrong or missing one, acting only on the sites the token belongs to, and
// never logging the token.
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { Provisioner } from '../../src/provisioner/provisioner.js';
import { controlProvisioners } from '../../src/monitor/control.js';
import { startMonitorServer, type MonitorServer } from '../../src/monitor/http.js';
import { monitorRoutes } from '../../src/monitor/routes.js';
import type { HostJob, HostResult } from '../../src/host/types.js';
import { startNatsServer } from '@choria-provisioner/test-support/nats-server';
import { testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { until } from '@choria-provisioner/test-support/wait';
import { captureLogger } from '../choria/support/logger.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const log = captureLogger();

async function sites(
  specs: { site: string; token: string; yaml?: string }[],
  runner: (job: HostJob) => Promise<HostResult>,
): Promise<{ ps: Provisioner[]; monitor: MonitorServer }> {
  const srv = await startNatsServer({ jetstream: false });
  cleanups.push(() => srv.stop());
  const ps: Provisioner[] = [];
  for (const s of specs) {
    const config = testConfig(
      `site: ${s.site}\nworkers: 1\n${s.token !== '' ? `monitor_api_token: ${s.token}\n` : ''}${s.yaml ?? ''}`,
    );
    const p = new Provisioner({
      config,
      choria: testSettings(srv.url, config, `prov-${s.site}.example.net`),
      registry: new Registry(),
      hostRunner: runner,
      helper: () => ({}),
      logger: log.logger,
      stopTimeoutMs: 2000,
    });
    cleanups.push(() => p.stop());
    await p.start();
    ps.push(p);
  }
  const monitor = await startMonitorServer({
    port: 0,
    host: '127.0.0.1',
    registry: new Registry(),
    control: (req) => controlProvisioners(ps, req),
  });
  cleanups.push(() => monitor.close());
  return { ps, monitor };
}

const post = async (
  m: MonitorServer,
  path: string,
  token?: string,
): Promise<{ status: number; body: { error?: string; sites?: { site: string; result: string }[] } }> => {
  const res = await fetch(`${m.url}${path}`, {
    method: 'POST',
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });
  return {
    status: res.status,
    body: (await res.json()) as { error?: string; sites?: { site: string; result: string }[] },
  };
};

describe('control requests on the monitor port', () => {
  it('are refused while no site sets monitor_api_token', async () => {
    const { monitor, ps } = await sites([{ site: 'lon', token: '' }], async () => ({ outcome: 'provisioned' }));
    const r = await post(monitor, '/pause', 'anything');
    expect(r).toEqual({
      status: 403,
      body: { error: 'control requests are disabled: no site sets monitor_api_token' },
    });
    expect(ps[0]!.paused).toBe(false);
  });

  it('need the token of the site, act only on its sites, and never log it', async () => {
    const { monitor, ps } = await sites(
      [
        { site: 'lon', token: 'lon-s3cret-token' },
        { site: 'nyc', token: 'nyc-s3cret-token' },
      ],
      async () => ({ outcome: 'provisioned' }),
    );
    const [lon, nyc] = ps as [Provisioner, Provisioner];
    expect((await post(monitor, '/pause')).status).toBe(401);
    expect(await post(monitor, '/pause', 'nyc-s3cret-tokeX')).toEqual({
      status: 401,
      body: { error: 'the token matches no site' },
    });
    expect((await post(monitor, '/pause?site=nyc', 'lon-s3cret-token')).status).toBe(404);
    expect(lon.paused || nyc.paused).toBe(false);

    expect(await post(monitor, '/pause', 'lon-s3cret-token')).toEqual({
      status: 200,
      body: { sites: [{ site: 'lon', result: 'paused' }] },
    });
    expect([lon.paused, nyc.paused]).toEqual([true, false]);
    expect((await post(monitor, '/pause', 'lon-s3cret-token')).body.sites?.[0]?.result).toBe('already paused');
    expect((await post(monitor, '/resume?site=lon', 'lon-s3cret-token')).body.sites).toEqual([
      { site: 'lon', result: 'resumed' },
    ]);
    expect(lon.paused).toBe(false);
    expect((await post(monitor, '/nodes/x/frobnicate', 'lon-s3cret-token')).status).toBe(404);
    expect((await fetch(`${monitor.url}/pause`)).status).toBe(404); // GET is not a control request
    expect(log.text()).toContain('Paused on request through the monitor port');
    expect(log.text()).not.toMatch(/s3cret-token/);
  });

  it('release a quarantined node and retry one at once', async () => {
    const jobs: string[] = [];
    const { monitor, ps } = await sites(
      [{ site: 'lon', token: 't0ken', yaml: 'quarantine_after: 1\n' }],
      async (job) => {
        jobs.push(job.identity);
        return { outcome: 'failed', message: 'CSR refused' };
      },
    );
    const p = ps[0]!;
    p.offer('bad.example.net', 'discovery');
    await until('quarantined', () => p.status().hosts[0]?.state === 'quarantined');
    expect((await post(monitor, '/nodes/bad.example.net/release', 't0ken')).body.sites).toEqual([
      { site: 'lon', result: 'released bad.example.net' },
    ]);
    expect((await post(monitor, '/nodes/bad.example.net/release', 't0ken')).body.sites).toEqual([
      { site: 'lon', result: 'bad.example.net was not quarantined' },
    ]);
    expect(p.status().hosts[0]?.state).toBe('failed');
    expect((await post(monitor, `/nodes/${encodeURIComponent('bad.example.net')}/retry`, 't0ken')).body.sites).toEqual([
      { site: 'lon', result: 'queued bad.example.net' },
    ]);
    await until('retried', () => jobs.length === 2 && p.status().busyWorkers === 0);
  });

  it('a paused site accepts no retry, and says so', async () => {
    const jobs: string[] = [];
    const { monitor, ps } = await sites(
      [{ site: 'lon', token: 't0ken' }],
      async (job) => (jobs.push(job.identity), { outcome: 'provisioned' }),
    );
    const p = ps[0]!;
    p.pause();
    const r = await post(monitor, '/nodes/n1.example.net/retry', 't0ken');
    expect(r).toEqual({
      status: 409,
      body: {
        sites: [
          { site: 'lon', result: 'not queued n1.example.net: the site is paused and queues nothing; resume it first' },
        ],
      },
    });
    expect(p.retry('n1.example.net')).toBe('paused');
    expect(p.status().hosts).toHaveLength(0);
    p.resume();
    expect((await post(monitor, '/nodes/n1.example.net/retry', 't0ken')).body.sites).toEqual([
      { site: 'lon', result: 'queued n1.example.net' },
    ]);
    await until('provisioned', () => jobs.length === 1);
  });

  it('refuse a node that is not a valid identity: logged escaped, counted, nothing listed or queued', async () => {
    const { monitor, ps } = await sites([{ site: 'lon', token: 't0ken' }], async () => ({ outcome: 'provisioned' }));
    const p = ps[0]!;
    for (const bad of ['a b', '*', '>', '/./', 'evil\u001b[2J', 'x'.repeat(300)]) {
      const r = await post(monitor, `/nodes/${encodeURIComponent(bad)}/retry`, 't0ken');
      expect(r.status, bad).toBe(400);
      expect(r.body.error).toMatch(/^retry refused: the node is not a valid identity \(it /);
      expect(JSON.stringify(r.body)).not.toContain(bad);
    }
    expect((await post(monitor, `/nodes/${encodeURIComponent('a b')}/release`, 't0ken')).status).toBe(400);
    expect(p.retry('a.*')).toBe('not-an-identity');
    expect(p.offer('a b', 'operator')).toBe(false);
    expect(p.release('a b')).toBe(false);
    expect(p.status().hosts).toHaveLength(0);
    expect(await p.metrics.registry.metrics()).toMatch(
      /choria_provisioner_refused_identities\{site="lon",source="control"\} 1[0-9]/,
    );
    expect(log.text()).not.toMatch(/\u001b/);
  });

  it('list the nodes of a site with monitor_api_token only to its token, and leave the counts and /metrics open', async () => {
    const { ps } = await sites(
      [
        { site: 'lon', token: 'lon-l1st-token' },
        { site: 'open', token: '' },
      ],
      async (job) => ({ outcome: 'failed', message: `no CMDB record for ${job.identity}` }),
    );
    const [lon, open] = ps as [Provisioner, Provisioner];
    lon.offer('lon-1.example.net', 'discovery');
    open.offer('open-1.example.net', 'discovery');
    await until(
      'both attempts ended',
      () => lon.status().hosts[0]?.state === 'failed' && open.status().hosts[0]?.state === 'failed',
    );
    const registry = new Registry();
    const monitor = await startMonitorServer({ port: 0, host: '127.0.0.1', registry, ...monitorRoutes(ps) });
    cleanups.push(() => monitor.close());
    const get = async (path: string, token?: string): Promise<{ status: number; text: string }> => {
      const res = await fetch(`${monitor.url}${path}`, {
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      });
      return { status: res.status, text: await res.text() };
    };
    type Site = {
      site: string;
      hosts: { identity: string }[];
      hostCounts: Record<string, number>;
      hostsNeedToken?: boolean;
    };
    const sitesOf = async (token?: string): Promise<Site[]> =>
      (JSON.parse((await get('/status', token)).text) as { sites: Site[] }).sites;

    // without the token: lon counts its node but does not list it; the open site lists its own
    const anonymous = await sitesOf();
    expect(anonymous[0]).toMatchObject({ site: 'lon', hosts: [], hostCounts: { failed: 1 }, hostsNeedToken: true });
    expect(anonymous[1]).toMatchObject({ site: 'open', hosts: [{ identity: 'open-1.example.net' }] });
    expect(anonymous[1]?.hostsNeedToken).toBeUndefined();
    expect(JSON.stringify(anonymous)).not.toContain('lon-1.example.net');
    // a wrong token is no token
    expect((await sitesOf('lon-l1st-tokeX'))[0]?.hosts).toEqual([]);
    // with it, lon lists its node
    const allowed = await sitesOf('lon-l1st-token');
    expect(allowed[0]).toMatchObject({ site: 'lon', hosts: [{ identity: 'lon-1.example.net' }] });
    expect(allowed[0]?.hostsNeedToken).toBeUndefined();

    const refused = await get('/nodes?site=lon');
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text)).toEqual({
      error:
        'the nodes of site "lon" are listed only with its monitor_api_token (Authorization: Bearer <monitor_api_token>)',
    });
    expect((await get('/nodes?site=lon', 'lon-l1st-tokeX')).status).toBe(401);
    expect((await get('/nodes', 'nyc')).status).toBe(401); // the first site is lon
    const listed = await get('/nodes?site=lon', 'lon-l1st-token');
    expect(listed.status).toBe(200);
    expect(listed.text).toContain('no CMDB record for lon-1.example.net');
    expect((await get('/nodes?site=open')).status).toBe(200);
    // what stays open: the metrics, health and readiness
    expect((await get('/metrics')).status).toBe(200);
    expect((await get('/healthz')).status).toBe(200);
    expect(log.text()).not.toMatch(/l1st-token/);
  });
});

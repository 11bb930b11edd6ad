// Credential renewal end to end: a provisioner on a real nats-server renews the server JWTs of a
// simulated fleet before they expire, by sending choria_provision#reprovision on the fleet's own
// collective. The simulated servers answer reprovision as go-choria does (agents/reprovision.ts in
// the simulator) and record a violation when one is sent to a server that cannot come back.
import { existsSync } from 'node:fs';
import puppeteer from 'puppeteer-core';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ChoriaClient,
  monitorRoutes,
  parseProvisionerConfig,
  silentLogger,
  startMonitorServer,
  type Provisioner,
} from '@choria-provisioner/core';
import type { SimulatedFleet } from '@choria-provisioner/simulator';
import { FleetHarness, expectExactlyOnce, plainConfiguration } from '@choria-provisioner/test-support/fleet';
import { testSettings } from '@choria-provisioner/test-support/settings';
import { readVector, vectorPath } from '@choria-provisioner/test-support/vectors';
import { until } from '@choria-provisioner/test-support/wait';

const h = new FleetHarness();
afterEach(() => h.cleanup());

const orgSeedHex = readVector('tokens', 'ed25519-signer.seed').trim();
const orgPublicHex = readVector('tokens', 'ed25519-signer.public').trim();
const provSeedPath = vectorPath('tokens', 'ed25519-other.seed');
const provPublicHex = readVector('tokens', 'ed25519-other.public').trim();

const NODES = 10;
// The simulated servers keep their provisioning connection when provisioned: on a broker with the
// Choria accounts they could not hear the fleet's collective, where real servers, logged in anew
// with their new credentials, do.
const ONE_ACCOUNT = { choriaAccounts: false } as const;
const CONCURRENCY = 3;

/** A client on the fleet's own collective, as the operator's renewal_choria_config would give. */
async function fleetClient(url: string): Promise<ChoriaClient> {
  const provisioning = testSettings(
    url,
    parseProvisionerConfig('token: s3cret\nchoria_insecure: true\n', 'p.yaml', { requireHelper: false }),
  );
  const client = await ChoriaClient.connect(
    { ...provisioning, identity: 'renewer.choria', mainCollective: 'mcollective', collectives: ['mcollective'] },
    { logger: silentLogger(), collective: 'mcollective' },
  );
  h.onCleanup(() => client.close());
  return client;
}

function renewalYaml(extra = '', returnTimeout = '15s'): string {
  return (
    `workers: 4\njwt_verify_cert: ${orgPublicHex}\njwt_signing_key: ${provSeedPath}\n` +
    'features:\n  ed25519: true\n' +
    'server_jwt_validity: 20s\n' +
    'renewal_choria_config: /etc/choria/renewals.cfg\n' +
    'renewal_window: 50\nrenewal_margin: 2s\n' +
    `renewal_concurrency: ${CONCURRENCY}\nrenewal_return_timeout: ${returnTimeout}\n${extra}`
  );
}

async function fleetWith(
  url: string,
  reprovision: { comesBack?: boolean; authorized?: boolean },
  provisionDefault?: boolean,
): Promise<SimulatedFleet> {
  const fleet = await h.fleet(url, {
    count: NODES,
    jwt: { signer: 'ed25519', seedHex: orgSeedHex, ...(provisionDefault !== undefined ? { provisionDefault } : {}) },
    serverJwtVerification: { signerEd25519PublicHex: provPublicHex },
    eventFormat: 'cloudevents',
    timeScale: 0.05,
    reprovision,
  });
  await fleet.waitForBooted(10_000);
  return fleet;
}

async function provisioner(url: string, fleet: SimulatedFleet, yaml = renewalYaml()): Promise<Provisioner> {
  const p = h.provisioner(url, yaml, {
    renewalClient: await fleetClient(url),
    helper: (req) => ({ configuration: plainConfiguration(req) }),
  });
  await p.start();
  await fleet.waitForAllProvisioned(20_000);
  expectExactlyOnce(fleet);
  return p;
}

const exp = (n: { serverJwtClaims?: Record<string, unknown> }): number => Number(n.serverJwtClaims?.['exp'] ?? 0);

describe('credential renewal', () => {
  it('renews every server JWT before it expires, a canary first, never more than the limit at once', async () => {
    const s = await h.broker(ONE_ACCOUNT);
    const fleet = await fleetWith(s.url, {});
    const p = await provisioner(s.url, fleet);
    const first = new Map(fleet.report().nodes.map((n) => [n.identity, exp(n)]));
    let mostOut = 0;
    let firstOut: number | undefined;
    await until(
      'every node renewed',
      () => {
        const nodes = fleet.report().nodes;
        const out = nodes.filter((n) => n.state !== 'provisioned').length;
        mostOut = Math.max(mostOut, out);
        if (out > 0) firstOut ??= out;
        return nodes.every(
          (n) => n.reprovisionCount >= 1 && n.state === 'provisioned' && exp(n) > (first.get(n.identity) ?? 0),
        );
      },
      40_000,
      { stepMs: 20 },
    );
    const nodes = fleet.report().nodes;
    for (const n of nodes) {
      // renewed before the first token expired: the new one was issued while the old was valid
      expect(exp(n) - 20, n.identity).toBeLessThan(first.get(n.identity) ?? 0);
      expect(n.cycle, n.identity).toBe(1);
      expect(n.configuredCount, n.identity).toBe(2);
    }
    expect(firstOut).toBe(1); // the canary alone
    expect(mostOut).toBeLessThanOrEqual(CONCURRENCY);
    expect(fleet.violationCount()).toBe(0);
    const view = p.status().renewals;
    expect(view?.stopped).toBeUndefined();
    expect(view?.counts.failed).toBe(0);
  });

  it('never sends reprovision to servers that cannot come back, and lists them as not renewable', async () => {
    const s = await h.broker(ONE_ACCOUNT);
    const fleet = await fleetWith(s.url, { comesBack: false });
    const p = await provisioner(s.url, fleet);
    await until('every node listed as not renewable', () => p.status().renewals?.counts['not-renewable'] === NODES);
    // past every node's renewal time and its expiry
    await new Promise((r) => setTimeout(r, 21_000));
    expect(fleet.report().nodes.map((n) => n.reprovisionCount)).toEqual(new Array<number>(NODES).fill(0));
    expect(fleet.violationCount('stranded')).toBe(0);
    expect(p.status().renewals?.notRenewable[0]?.reason).toContain('made without --default');
  });

  it("shows go-choria's refusal, stops after repeated failures and goes on when resumed", async () => {
    const s = await h.broker(ONE_ACCOUNT);
    const fleet = await fleetWith(s.url, { authorized: false });
    const p = await provisioner(s.url, fleet, renewalYaml('renewal_failure_limit: 2\n'));
    await until('the renewals stopped', () => p.status().renewals?.stopped !== undefined, 25_000);
    const view = p.status().renewals;
    expect(view?.stopped).toContain('2 renewals failed in a row');
    // why, to anyone; which nodes, only to the site's token
    expect(view?.stopped).not.toMatch(/node-\d+\.example\.net/);
    expect(view?.failed.map((f) => f.reason)).toEqual([
      expect.stringContaining('You are not authorized to call this agent or action'),
      expect.stringContaining('You are not authorized to call this agent or action'),
    ]);
    expect(sent(fleet)).toBe(2);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(sent(fleet)).toBe(2);
    expect(p.resumeRenewals()).toBe(true);
    await until('reprovision sent again after the resume', () => sent(fleet) > 2);
  });

  it('a canary that does not come back stops the round with one server out', async () => {
    const s = await h.broker(ONE_ACCOUNT);
    // provisioning JWTs made with --default (renewable), but these servers do not come back (they die)
    const fleet = await fleetWith(s.url, { comesBack: false }, true);
    const p = h.provisioner(s.url, renewalYaml('', '5s'), {
      renewalClient: await fleetClient(s.url),
      helper: (req) => ({ configuration: plainConfiguration(req) }),
    });
    await p.start();
    await fleet.waitForAllProvisioned(20_000);
    await until('the renewals stopped', () => p.status().renewals?.stopped !== undefined, 60_000); // silent twice, 10 s apart, before it fails
    expect(p.status().renewals?.stopped).toMatch(/a node's renewal failed: not provisioned again within 5 s/);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(sent(fleet)).toBe(1);
    expect(fleet.violationCount('stranded')).toBe(1);
    expect(p.status().renewals?.counts.failed).toBe(1);
  });

  it('a server whose choria_provision agent is not active does not answer: its renewal fails saying so', async () => {
    const s = await h.broker(ONE_ACCOUNT);
    // renewable by its provisioning JWT, but nothing listens for reprovision once it is provisioned
    // (go-choria discards a request for an agent it does not run, without a reply)
    const fleet = await h.fleet(s.url, {
      count: 3,
      jwt: { signer: 'ed25519', seedHex: orgSeedHex, provisionDefault: true },
      serverJwtVerification: { signerEd25519PublicHex: provPublicHex },
      eventFormat: 'cloudevents',
      timeScale: 0.05,
    });
    await fleet.waitForBooted(10_000);
    // past the reprovision request's own timeout, so the failure knows it was not answered
    const p = await provisioner(s.url, fleet, renewalYaml('', '30s'));
    await until('the renewals stopped', () => p.status().renewals?.stopped !== undefined, 60_000);
    expect(p.status().renewals?.stopped).toMatch(
      /^a node's renewal failed: not provisioned again within 30 s of reprovision, which it did not answer \(.+\)$/,
    );
    expect(p.status().renewals?.counts.failed).toBe(1);
    expect(fleet.report().nodes.filter((n) => n.state !== 'provisioned')).toEqual([]);
  }, 90_000);

  it.skipIf(CHROMIUM === undefined)('the status page shows why the renewals stopped, and resumes them', async () => {
    const s = await h.broker(ONE_ACCOUNT);
    const fleet = await fleetWith(s.url, { authorized: false });
    const p = await provisioner(s.url, fleet, renewalYaml('renewal_failure_limit: 1\nmonitor_api_token: page-t0ken\n'));
    await until('the renewals stopped', () => p.status().renewals?.stopped !== undefined, 25_000);
    const monitor = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry: new Registry(),
      ...monitorRoutes([p]),
    });
    h.onCleanup(() => monitor.close());
    const browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    h.onCleanup(() => browser.close());
    const page = await browser.newPage();
    await page.goto(`${monitor.url}/`, { waitUntil: 'load' });
    await page.waitForSelector('[data-field="renewals-stopped"]');
    const stopped = await page.$eval('[data-field="renewals-stopped"]', (e) => e.textContent ?? '');
    expect(stopped).toContain('You are not authorized to call this agent or action');
    // the nodes only to the site's token
    expect(await page.$$eval('[data-renewal]', (l) => l.length)).toBe(0);
    await page.type('#token', 'page-t0ken');
    await page.$eval('#token', (e) => e.dispatchEvent(new Event('change', { bubbles: true })));
    await page.waitForSelector('[data-renewal="failed"]');
    await page.click('[data-action="resume-renewals"]');
    await until(
      'the renewals resumed from the page',
      () => p.status().renewals?.counts.failed === 0 || sent(fleet) > 1,
    );
  });
});

const CHROMIUM =
  process.env['CHROMIUM_BIN'] ??
  ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));

const sent = (fleet: SimulatedFleet): number =>
  fleet.report().nodes.reduce((n, r) => n + (r.rpcCounts['choria_provision#reprovision'] ?? 0), 0);

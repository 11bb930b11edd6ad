// The status page at / in a real browser (Debian's chromium driven by puppeteer-core) against a
// provisioner provisioning a simulated fleet of 10,000 nodes: the page keeps polling while the
// fleet is provisioned, its counts match /status, the node table waits for the site's API token
// (monitor_api_token), a deferred node shows that it deferred but never the helper's message, and the state
// filter, the identity search, sorting and paging work. With STATUS_PAGE_SCREENSHOT=FILE
// it also saves a screenshot taken while the fleet is being provisioned (docs/status.md's).
import { existsSync } from 'node:fs';
import { Registry } from 'prom-client';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  monitorRoutes,
  startMonitorServer,
  type MonitorServer,
  type Provisioner,
} from '../../packages/core/src/index.js';
import { FleetHarness, discoverWhenIdle } from '@choria-provisioner/test-support/fleet';
import type { SimulatedFleet } from '@choria-provisioner/simulator';
import { until } from '@choria-provisioner/test-support/wait';

const CHROMIUM =
  process.env['CHROMIUM_BIN'] ??
  ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));
const NODES = 10_000;
/** the one node the helper defers, with a message in markup that the monitor port must not show (it is the helper's text) */
const FAILING = 'node-7.example.net';
const FAILURE = 'the CMDB has no <b>record</b> of node-7';

interface SiteCounts {
  [state: string]: number;
}

if (CHROMIUM === undefined) {
  console.warn(
    'status page browser test SKIPPED: no Chromium at /usr/bin/chromium (install the Debian package chromium, as .ci/run does, or set CHROMIUM_BIN)',
  );
}

describe.skipIf(CHROMIUM === undefined)('the status page in headless Chromium', () => {
  const h = new FleetHarness();
  let fleet: SimulatedFleet;
  let p: Provisioner;
  let monitor: MonitorServer;
  let browser: Browser;
  let page: Page;

  const status = async (): Promise<{ hostCounts: SiteCounts; queue: number }> => {
    const body = (await (await fetch(`${monitor.url}/status?limit=0`)).json()) as {
      sites: { hostCounts: SiteCounts; queue: number }[];
    };
    return body.sites[0] as { hostCounts: SiteCounts; queue: number };
  };
  /** the counts the page shows, by state */
  const pageCounts = (): Promise<SiteCounts> =>
    page.$$eval('[data-site="test"] [data-count]', (buttons) =>
      Object.fromEntries(
        buttons.map((b) => [
          b.getAttribute('data-count') ?? '',
          Number((b.querySelector('b')?.textContent ?? '').replace(/,/g, '')),
        ]),
      ),
    );
  /**
   * page.click that survives the page's redraw: the rows are replaced every 2 s, and an element
   * found just before a redraw is detached by the time it is clicked; the next lookup finds the new one.
   */
  const click = async (selector: string): Promise<void> => {
    for (let tries = 1; ; tries++) {
      try {
        await page.click(selector);
        return;
      } catch (err) {
        if (tries >= 5 || !/detached|not clickable/i.test(String(err))) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const polls = async (): Promise<number> => Number(await page.$eval('body', (b) => b.dataset['polls'] ?? '0'));
  const range = (): Promise<string> => page.$eval('#range', (e) => e.textContent ?? '');
  const rows = (): Promise<{ identity: string; state: string; error: string }[]> =>
    page.$$eval('#node-rows tr', (trs) =>
      trs.map((tr) => ({
        identity: tr.getAttribute('data-identity') ?? '',
        state: tr.querySelector('[data-field="state"]')?.textContent ?? '',
        error: tr.querySelector('[data-field="lastError"]')?.textContent ?? '',
      })),
    );

  beforeAll(async () => {
    const s = await h.broker();
    fleet = await h.fleet(s.url, { count: NODES, timeScale: 0.001 });
    await fleet.waitForBooted(60_000);
    const registry = new Registry();
    p = h.provisioner(s.url, 'workers: 64\nmonitor_api_token: page-t0ken\n', {
      registry,
      holdMs: 600_000,
      helper: (req) => {
        if (req.identity === FAILING) return { defer: true, msg: FAILURE };
        return { configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' } };
      },
    });
    monitor = await startMonitorServer({ port: 0, host: '127.0.0.1', registry, ...monitorRoutes([p]) });
    h.onCleanup(() => monitor.close());
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    h.onCleanup(() => browser.close());
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(String(err)));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    h.onCleanup(async () => expect(problems).toEqual([]));
    await page.goto(`${monitor.url}/`, { waitUntil: 'load' });
  }, 120_000);

  afterAll(() => h.cleanup(), 60_000);

  /** types the API token into the page (as an operator does: the field, then leaving it) */
  const enterToken = async (token: string): Promise<void> => {
    await page.evaluate(
      "{ const t = document.getElementById('token'); t.value = ''; t.dispatchEvent(new Event('change')); }",
    );
    if (token !== '') {
      await page.type('#token', token);
      await page.$eval('#token', (e) => e.dispatchEvent(new Event('change', { bubbles: true })));
    }
  };
  const locked = (): Promise<string> =>
    page.$eval('#node-rows', (e) => e.querySelector('[data-field="locked"]')?.textContent ?? '');

  it('lists the nodes of a site with monitor_api_token only once its token is entered', async () => {
    await until('the first poll', async () => (await polls()) >= 1, 10_000);
    await until('the table to ask for the token', async () => (await locked()).includes('enter it above'), 5_000, {
      stepMs: 100,
    });
    expect(await rows()).toHaveLength(1);
    await enterToken('wrong-token');
    await until('the wrong token refused', async () => (await locked()).includes('is not this site'), 5_000, {
      stepMs: 100,
    });
    await enterToken('page-t0ken');
    await until('the table', async () => (await locked()) === '' && (await range()).endsWith(' of 0'), 5_000, {
      stepMs: 100,
    });
  });

  it('keeps polling while 10,000 nodes are provisioned, and then shows exactly what /status says', async () => {
    await until('the first poll', async () => (await polls()) >= 1, 10_000);
    await p.start();
    let screenshot = process.env['STATUS_PAGE_SCREENSHOT'];
    const seen: number[] = [];
    await until(
      `every node provisioned but ${FAILING}`,
      async () => {
        seen.push(await polls());
        const c = fleet.countByState();
        if (screenshot !== undefined && (c.provisioned ?? 0) > NODES / 3) {
          await page.screenshot({ path: screenshot, fullPage: false });
          screenshot = undefined;
        }
        return (c.provisioned ?? 0) === NODES - 1;
      },
      120_000,
      { tick: () => discoverWhenIdle(p), stepMs: 500 },
    );
    // the page went on polling (every 2 s) the whole time
    const during = (seen.at(-1) ?? 0) - (seen[0] ?? 0);
    expect(during).toBeGreaterThanOrEqual(Math.floor(seen.length / 4) - 1);
    await until(
      'the deferred node tried and the queue empty',
      async () => (await status()).queue === 0 && (await status()).hostCounts['deferred'] === 1,
      30_000,
      { tick: () => discoverWhenIdle(p) },
    );
    const want = (await status()).hostCounts;
    const sorted = (c: SiteCounts): string => JSON.stringify(Object.entries(c).sort());
    await until(
      'the page to show the same counts as /status',
      async () => sorted(await pageCounts()) === sorted(want),
      10_000,
      { stepMs: 250 },
    );
    expect(want).toEqual({ deferred: 1, held: NODES - 1 });
    expect(await page.$eval('[data-site="test"] [data-field="workers"]', (e) => e.textContent)).toMatch(/^\d+ \/ 64$/);
    expect(await page.$eval('[data-site="test"] [data-field="run-state"]', (e) => e.textContent)).toBe('running');
    expect(await page.$$eval('[data-site="test"] svg.chart rect', (r) => r.length)).toBeGreaterThan(0);
    expect(await range()).toBe(`1–100 of ${NODES.toLocaleString('en')}`);
    // the site's API token is configured, and shown nowhere
    expect(await page.content()).not.toContain('page-t0ken');
  }, 240_000);

  it("finds the deferred node by identity and shows that it deferred in the provisioner's words, not the helper's", async () => {
    await page.type('#search', FAILING);
    await until('the search result', async () => (await range()) === '1–1 of 1', 5_000, { stepMs: 100 });
    const [row] = await rows();
    expect(row).toMatchObject({ identity: FAILING, state: 'deferred' });
    expect(row?.error).toBe("configuration defered by the helper; its message is in the provisioner's log");
    expect(await page.content()).not.toContain('CMDB');
    // (a string: the test's TypeScript has no DOM types)
    await page.evaluate(
      "const s = document.getElementById('search'); s.value = ''; s.dispatchEvent(new Event('input', { bubbles: true }));",
    );
    await until('every node again', async () => (await range()) === `1–100 of ${NODES.toLocaleString('en')}`, 5_000, {
      stepMs: 100,
    });
  });

  it('filters by state from the counts and the state menu', async () => {
    await click('[data-site="test"] [data-count="deferred"]');
    await until('only the deferred node', async () => (await range()) === '1–1 of 1', 5_000, { stepMs: 100 });
    expect((await rows()).map((r) => r.state)).toEqual(['deferred']);
    await page.select('#state', 'held');
    await until(
      'the held nodes',
      async () => (await range()) === `1–100 of ${(NODES - 1).toLocaleString('en')}`,
      5_000,
      { stepMs: 100 },
    );
    expect(new Set((await rows()).map((r) => r.state))).toEqual(new Set(['held']));
    await page.select('#state', '');
    await until('every state', async () => (await range()) === `1–100 of ${NODES.toLocaleString('en')}`, 5_000, {
      stepMs: 100,
    });
  });

  it('sorts by a column and pages through 10,000 nodes', async () => {
    const identities = fleet.identities().sort();
    await until('ascending by identity', async () => (await rows())[0]?.identity === identities[0], 5_000, {
      stepMs: 100,
    });
    await click('th[data-sort="identity"]');
    await until('descending by identity', async () => (await rows())[0]?.identity === identities.at(-1), 5_000, {
      stepMs: 100,
    });
    expect(await page.$eval('th[data-sort="identity"]', (e) => e.getAttribute('aria-sort'))).toBe('descending');
    await click('#next');
    await until('the second page', async () => (await range()) === `101–200 of ${NODES.toLocaleString('en')}`, 5_000, {
      stepMs: 100,
    });
    expect((await rows())[0]?.identity).toBe(identities.at(-101));
    await click('th[data-sort="state"]');
    await until('the deferred node first (by state)', async () => (await rows())[0]?.identity === FAILING, 5_000, {
      stepMs: 100,
    });
  });

  it('pauses, resumes and retries through the page with the API token, and refuses without it', async () => {
    const notice = (): Promise<string> => page.$eval('#notice', (e) => e.textContent ?? '');
    const node7 = async (): Promise<number> => {
      const res = await fetch(`${monitor.url}/nodes?search=${FAILING}`, {
        headers: { authorization: 'Bearer page-t0ken' },
      });
      const body = (await res.json()) as { nodes: { attempts: number }[] };
      return body.nodes[0]?.attempts ?? -1;
    };
    await page.type('#search', FAILING);
    await until('the deferred node alone', async () => (await range()) === '1–1 of 1', 5_000, { stepMs: 100 });
    const before = await node7();
    // without the token the table is gone, and the site's pause is refused
    await enterToken('');
    await until('the table locked', async () => (await locked()) !== '', 5_000, { stepMs: 100 });
    await click('[data-site="test"] [data-action="pause"]');
    await until('the refusal', async () => (await notice()).startsWith('enter the API token'), 5_000, { stepMs: 100 });
    await enterToken('wrong-token');
    await click('[data-site="test"] [data-action="pause"]');
    await until('the wrong token refused', async () => (await notice()) === 'the token matches no site', 5_000, {
      stepMs: 100,
    });
    expect(p.paused).toBe(false);
    await enterToken('page-t0ken');
    await until('the deferred node again', async () => (await range()) === '1–1 of 1', 5_000, { stepMs: 100 });
    await click('#node-rows [data-action="retry"]');
    await until('the retry queued', async () => (await notice()) === `test: queued ${FAILING}`, 5_000, { stepMs: 100 });
    await until('node-7 tried again', async () => (await node7()) === before + 1, 15_000, { stepMs: 100 });
    await click('[data-site="test"] [data-action="pause"]');
    await until(
      'paused',
      async () => (await page.$eval('[data-site="test"] [data-field="run-state"]', (e) => e.textContent)) === 'paused',
      5_000,
      { stepMs: 100 },
    );
    expect(p.paused).toBe(true);
    // a paused site queues nothing: the page says so
    await click('#node-rows [data-action="retry"]');
    await until(
      'the retry refused while paused',
      async () => (await notice()).includes('the site is paused and queues nothing'),
      5_000,
      { stepMs: 100 },
    );
    await click('[data-site="test"] [data-action="resume"]');
    await until(
      'running again',
      async () => (await page.$eval('[data-site="test"] [data-field="run-state"]', (e) => e.textContent)) === 'running',
      5_000,
      { stepMs: 100 },
    );
    expect(p.paused).toBe(false);
    // typed into a password field and kept in the tab's session storage: never part of the page
    expect(await page.content()).not.toContain('page-t0ken');
  });

  it('reads well on a phone', async () => {
    await page.setViewport({ width: 390, height: 844, isMobile: true });
    await until('a poll at phone size', async () => (await polls()) > 0, 5_000);
    const overflow = Number(await page.evaluate('document.documentElement.scrollWidth - window.innerWidth'));
    expect(overflow).toBeLessThanOrEqual(0); // the table scrolls inside its box, the page does not
  });
});

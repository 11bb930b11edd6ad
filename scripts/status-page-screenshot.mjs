#!/usr/bin/env node
// Takes docs/status-page.png: runs `choria-provisioner demo` (ed25519, 4,000 nodes, slow enough to
// be caught in the middle), opens its status page in headless Chromium with puppeteer-core (the
// browser test's tooling) and saves a screenshot while the fleet is being provisioned.
// usage: npm run build && node scripts/status-page-screenshot.mjs [OUT.png]
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = process.argv[2] ?? `${root}docs/status-page.png`;
const chromium =
  process.env.CHROMIUM_BIN ??
  ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));
if (chromium === undefined) {
  console.error('no Chromium found: apt-get install -y chromium, or set CHROMIUM_BIN');
  process.exit(2);
}

const demo = spawn(
  process.execPath,
  [`${root}packages/cli/dist/bin.js`, 'demo', '--mode', 'ed25519', '--nodes', '4000', '--workers', '8'],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
let output = '';
const pageUrl = await new Promise((resolve, reject) => {
  demo.stdout.on('data', (d) => {
    output += d.toString();
    const m = /status page (http:\/\/\S+\/)/.exec(output);
    if (m !== null) resolve(m[1]);
  });
  demo.once('exit', (code) =>
    reject(new Error(`the demo ended (${code}) before it printed its status page:\n${output}`)),
  );
});
const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1200, height: 820 });
  await page.goto(pageUrl, { waitUntil: 'load' });
  // a few polls in: the chart has bars and some nodes are done, many still waiting
  // (a string: it runs in the page)
  await page.waitForFunction("Number(document.body.dataset.polls ?? '0') >= 3", { timeout: 30_000 });
  await page.screenshot({ path: out });
  console.log(`saved ${out} from ${pageUrl}`);
} finally {
  await browser.close();
  demo.kill('SIGINT');
}

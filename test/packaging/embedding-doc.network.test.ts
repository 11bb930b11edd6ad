// Every TypeScript example in docs/embedding.md runs, one after another, as the page tells the story:
// load a site, start and stop a provisioner that provisions a simulated fleet, serve the monitor
// endpoint, write an in-process helper, build the standard helper runners and run one, and run two
// sites side by side. Each example becomes a module of its own. The variables it takes from its
// surroundings (embedding-doc-page.ts names them) are handed to it with real values: brokers with
// simulated fleets, a fixture directory with the files the page names, a CMDB. What an example
// declares at its top level is exported, so the test can look at it and hand it to the next.
//
// What a test machine cannot have is replaced, and only that: the page's `/etc/choria-provisioner/`
// is the fixture directory, its port 8080 is a free port, and a comment line `// ...` or
// `// on shutdown` (where a program would do its work) waits until the fleets are provisioned.
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as core from '@choria-provisioner/core';
import { SimulatedFleet } from '@choria-provisioner/simulator';
import { FleetHarness } from '@choria-provisioner/test-support/fleet';
import {
  fragments,
  publicNamesUsed,
  root,
  surroundingsUsed,
  topLevelNames,
  type Fragment,
} from './embedding-doc-page.js';

const HARNESS = '__embeddingDocRun';
const NODES = 5;
const runDir = join(root, '.cache', `embedding-doc-${process.pid}`);
const fixtureDir = join(runDir, 'etc');

interface Harness {
  surroundings: Record<string, unknown>;
  meanwhile: () => Promise<void>;
}
const harness: Harness = { surroundings: {}, meanwhile: () => Promise.resolve() };
(globalThis as Record<string, unknown>)[HARNESS] = harness;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  await h.cleanup();
  rmSync(runDir, { recursive: true, force: true });
  delete (globalThis as Record<string, unknown>)[HARNESS];
});

/** The fragment as a runnable module: surroundings from the harness, public names from the package. */
function asRunnable(f: Fragment): string {
  const code = f.code
    .replaceAll('/etc/choria-provisioner/', `${fixtureDir}/`)
    .replace(/\bport: 8080\b/g, 'port: 0')
    .replace(/^[ \t]*\/\/ (?:\.\.\.|on shutdown)[ \t]*$/gm, `await (globalThis as any).${HARNESS}.meanwhile();`);
  const imported = publicNamesUsed(f.code);
  const taken = surroundingsUsed(f.code);
  const exported = topLevelNames(f.code);
  return [
    "import * as __core from '@choria-provisioner/core';",
    imported.length > 0 ? `const { ${imported.join(', ')} } = __core as any;` : '',
    taken.length > 0 ? `const { ${taken.join(', ')} } = (globalThis as any).${HARNESS}.surroundings;` : '',
    code,
    `export { ${exported.join(', ')} };`,
  ].join('\n');
}

async function run(
  f: Fragment,
  meanwhile: () => Promise<void> = () => Promise.resolve(),
): Promise<Record<string, unknown>> {
  const file = join(runDir, `example-${f.index}.ts`);
  writeFileSync(file, asRunnable(f));
  harness.meanwhile = meanwhile;
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
}

/** The page's example that contains `marker`: a reordered or rewritten page fails here by name. */
function example(marker: string): Fragment {
  const found = fragments.filter((f) => f.code.includes(marker));
  expect(
    found.map((f) => f.line),
    `one example of docs/embedding.md contains ${JSON.stringify(marker)}`,
  ).toHaveLength(1);
  return found[0] as Fragment;
}

const h = new FleetHarness();

async function brokerWithFleet(name: string): Promise<{ url: string; fleet: SimulatedFleet }> {
  const server = await h.broker({ choriaAccounts: false });
  const fleet = await h.fleet(server.url, { count: NODES, name, identityPattern: `${name}-{i}.example.net` });
  await fleet.waitForBooted(10_000);
  return { url: server.url, fleet };
}

const brokersOf = (site: string): string => `nats://broker.${site}.example.net:4222`;

function siteHelper(site: string): core.HelperFunction {
  return (req) => ({
    configuration: {
      identity: req.identity,
      'plugin.choria.server.provision': 'false',
      'plugin.choria.middleware_hosts': brokersOf(site),
    },
  });
}

function expectProvisionedOnce(fleet: SimulatedFleet, site: string): void {
  const report = fleet.report();
  expect(report.totals.violations, JSON.stringify(report.totals.violationsByKind)).toBe(0);
  expect(report.nodes).toHaveLength(NODES);
  for (const node of report.nodes) {
    expect([node.state, node.configuredCount, node.restartCount]).toEqual(['provisioned', 1, 1]);
    expect(node.configuration?.['plugin.choria.middleware_hosts']).toBe(brokersOf(site));
  }
}

function siteText(site: string, broker: string): core.SiteText {
  return {
    yaml: [`site: ${site}`, 'token: "s3cret"', 'workers: 2', 'interval: 5m', 'choria_insecure: true'].join('\n'),
    yamlSource: `${site}.yaml`,
    choria: [
      `identity = provisioner.${site}.example.net`,
      `plugin.choria.middleware_hosts = ${broker}`,
      'plugin.security.provider = file',
    ].join('\n'),
    choriaSource: `${site}.cfg`,
  };
}

// the one-shot helper the page names: the node's identity and the site's brokers, from stdin
const PROCESS_HELPER = `#!/usr/bin/env node
let input = '';
process.stdin.on('data', (d) => (input += d));
process.stdin.on('end', () => {
  const req = JSON.parse(input);
  process.stdout.write(JSON.stringify({ configuration: { identity: req.identity, from: 'process helper' } }));
});
`;
// the pool helper the page names: one request per line, one reply per line
const POOL_HELPER = `import { createInterface } from 'node:readline';
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const req = JSON.parse(line);
  process.stdout.write(JSON.stringify({ configuration: { identity: req.identity, from: 'pool helper' } }) + '\\n');
}
`;

const fleets: Record<string, { url: string; fleet: SimulatedFleet }> = {};

beforeAll(async () => {
  const [first, lon, nyc] = await Promise.all([
    brokerWithFleet('first'),
    brokerWithFleet('lon'),
    brokerWithFleet('nyc'),
  ]);
  Object.assign(fleets, { first, lon, nyc });
  mkdirSync(fixtureDir, { recursive: true });
  writeFileSync(join(fixtureDir, 'lon.yaml'), siteText('lon', '').yaml);
  writeFileSync(join(fixtureDir, 'choria.cfg'), siteText('lon', first.url).choria);
  writeFileSync(join(fixtureDir, 'helper'), PROCESS_HELPER);
  chmodSync(join(fixtureDir, 'helper'), 0o755);
  writeFileSync(join(fixtureDir, 'pool-helper.mjs'), POOL_HELPER);
  const sites = Object.fromEntries(
    ['lon', 'nyc'].map((site) => [
      site,
      core.parseSite(siteText(site, fleets[site]?.url ?? ''), { requireHelper: false }),
    ]),
  );
  harness.surroundings = {
    logger: core.silentLogger(),
    registry: new Registry(),
    helper: siteHelper('lon'),
    configs: { lon: sites['lon']?.config, nyc: sites['nyc']?.config },
    settings: { lon: sites['lon']?.choria, nyc: sites['nyc']?.choria },
    helperFor: siteHelper,
    cmdb: {
      lookup: (identity: string) =>
        Promise.resolve(identity.startsWith('known') ? { brokers: ['nats://b1:4222', 'nats://b2:4222'] } : undefined),
    },
    request: { identity: 'known-1.example.net', csr: null, ed25519_pubkey: null, inventory: '{}', jwt: null },
    signal: new AbortController().signal,
  };
});

describe('docs/embedding.md examples, run', () => {
  it('every example of the page is run below', () => {
    const markers = [
      '/* ... */',
      'loadSite(',
      'await provisioner.start()',
      'startMonitorServer(',
      'cmdb.lookup(',
      'perNode.run(',
      "['lon', 'nyc']",
    ];
    expect(markers.map((m) => example(m).index).sort()).toEqual(fragments.map((f) => f.index));
  });

  it('imports the public names', async () => {
    const f = example('/* ... */');
    await run(f);
    for (const name of publicNamesUsed(f.code).concat(['Provisioner', 'loadSite', 'createHelperRunner'])) {
      expect(typeof (core as Record<string, unknown>)[name], name).toBe('function');
    }
  });

  it('loads a site from its YAML and the Choria client file it is given', async () => {
    const { config, choria } = (await run(example('loadSite('))) as {
      config: core.ProvisionerConfig;
      choria: core.ChoriaSettings;
    };
    expect(config.site).toBe('lon');
    expect(config.token).toBe('s3cret');
    // the overrides the provisioner applies to its client settings
    expect(choria.mainCollective).toBe('provisioning');
    expect(choria.middlewareHosts.join(',')).toContain(new URL(fleets['first']?.url ?? '').port);
    Object.assign(harness.surroundings, { config, choria });
  });

  it('starts a provisioner that provisions the fleet, and stops it', async () => {
    const fleet = fleets['first']?.fleet as SimulatedFleet;
    const { provisioner } = (await run(example('await provisioner.start()'), () =>
      fleet.waitForAllProvisioned(20_000),
    )) as { provisioner: core.Provisioner };
    expectProvisionedOnce(fleet, 'lon');
    const registry = harness.surroundings['registry'] as Registry;
    expect(await registry.metrics()).toContain(`choria_provisioner_provisioned{site="lon"} ${NODES}`);
    harness.surroundings['provisioners'] = [provisioner];
  });

  it('serves the metrics, the status and the page of the sites on one monitor endpoint', async () => {
    const { monitor } = (await run(example('startMonitorServer('))) as { monitor: core.MonitorServer };
    cleanups.push(() => monitor.close());
    expect(monitor.port).toBeGreaterThan(0);
    expect(await (await fetch(`${monitor.url}/metrics`)).text()).toMatch(/^process_cpu_user_seconds_total \d/m);
    const status = (await (await fetch(`${monitor.url}/status`)).json()) as { sites: { site: string }[] };
    expect(status.sites.map((s) => s.site)).toEqual(['lon']);
    harness.surroundings['monitor'] = monitor;
  });

  it('writes an in-process helper that asks a CMDB and defers a node it does not know', async () => {
    const { helper } = (await run(example('cmdb.lookup('))) as { helper: core.HelperFunction };
    const signal = new AbortController().signal;
    const request = harness.surroundings['request'] as core.HelperRequest;
    expect(await helper(request, { signal })).toMatchObject({
      configuration: { identity: request.identity, 'plugin.choria.middleware_hosts': 'nats://b1:4222,nats://b2:4222' },
    });
    expect(await helper({ ...request, identity: 'new-1.example.net' }, { signal })).toMatchObject({ defer: true });
  });

  it('builds the standard helper runners and runs a helper program', async () => {
    const { reply } = (await run(example('perNode.run('))) as { reply: core.HelperReply };
    expect(reply.configuration).toEqual({ identity: 'known-1.example.net', from: 'process helper' });
  });

  it('runs two sites side by side, each provisioning its own fleet, and closes the monitor', async () => {
    const registry = new Registry();
    harness.surroundings['registry'] = registry;
    const monitor = harness.surroundings['monitor'] as core.MonitorServer;
    const { sites } = (await run(example("['lon', 'nyc']"), async () => {
      await Promise.all(['lon', 'nyc'].map((s) => fleets[s]?.fleet.waitForAllProvisioned(20_000)));
    })) as { sites: core.Provisioner[] };
    expect(sites.map((p) => p.config.site)).toEqual(['lon', 'nyc']);
    for (const site of ['lon', 'nyc']) {
      expectProvisionedOnce(fleets[site]?.fleet as SimulatedFleet, site);
      expect(await registry.metrics()).toContain(`choria_provisioner_provisioned{site="${site}"} ${NODES}`);
    }
    await expect(fetch(`${monitor.url}/metrics`)).rejects.toThrow();
  });
});

// The upstream Grafana dashboard keeps working: every series its panels query
// (examples/grafana/dashboard-metrics.json, written from the metric names in docs/metrics.md) is served by /metrics of
// startMonitorServer with the `site` label and the labels the panel groups by. The importable
// dashboard (examples/grafana/choria-provisioner.json) is held to the same rule, query by query.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from 'nats';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { Provisioner, startMonitorServer, type HelperFunction, type MonitorServer } from '@choria-provisioner/core';
import { SimulatedFleet } from '@choria-provisioner/simulator';
import { startNatsServer } from '@choria-provisioner/test-support/nats-server';
import { testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { FleetHarness } from '@choria-provisioner/test-support/fleet';
import { until } from '@choria-provisioner/test-support/wait';
import { provisioningLogin } from '@choria-provisioner/test-support/nats-server';

type MetricType = 'counter' | 'gauge' | 'summary';
interface SeriesSpec {
  name: string;
  type: MetricType;
  labels: string[];
}
interface PanelSpec {
  row: string;
  title: string;
  series: SeriesSpec[];
}

function fail(what: string): never {
  throw new Error(`examples/grafana/dashboard-metrics.json: ${what}`);
}

function parseSeries(v: unknown, where: string): SeriesSpec {
  if (typeof v !== 'object' || v === null) fail(`${where} is not an object`);
  const o = v as Record<string, unknown>;
  const { name, type, labels } = o;
  if (typeof name !== 'string' || !/^choria_provisioner_[a-z_]+$/.test(name))
    fail(`${where}.name ${JSON.stringify(name)} is not a provisioner metric`);
  if (type !== 'counter' && type !== 'gauge' && type !== 'summary')
    fail(`${where}.type ${JSON.stringify(type)} is not counter, gauge or summary`);
  if (!Array.isArray(labels) || !labels.every((l): l is string => typeof l === 'string'))
    fail(`${where}.labels is not a list of strings`);
  return { name, type, labels };
}

function readDashboardPanels(): PanelSpec[] {
  const doc: unknown = JSON.parse(
    readFileSync(new URL('../../examples/grafana/dashboard-metrics.json', import.meta.url), 'utf8'),
  );
  const panels = typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>)['panels'] : undefined;
  if (!Array.isArray(panels)) fail('has no panels list');
  return panels.map((p: unknown, i): PanelSpec => {
    if (typeof p !== 'object' || p === null) fail(`panels[${i}] is not an object`);
    const o = p as Record<string, unknown>;
    if (typeof o['row'] !== 'string' || typeof o['title'] !== 'string') fail(`panels[${i}] needs a row and a title`);
    if (!Array.isArray(o['series']) || o['series'].length === 0) fail(`panels[${i}].series is not a non-empty list`);
    return {
      row: o['row'],
      title: o['title'],
      series: o['series'].map((s: unknown, j) => parseSeries(s, `panels[${i}].series[${j}]`)),
    };
  });
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text exposition format: `# TYPE` lines and samples. */
function parseExposition(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type !== null) types.set(type[1] as string, type[2] as string);
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null) throw new Error(`unparsable /metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string;
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

const family = (s: SeriesSpec): string => (s.type === 'summary' ? s.name.replace(/_(sum|count)$/, '') : s.name);

/** Series (name + labels) the dashboard needs that /metrics does not serve for `site`. */
function missingSeries(panels: PanelSpec[], text: string, site: string): string[] {
  const { samples } = parseExposition(text);
  const missing: string[] = [];
  for (const p of panels) {
    for (const s of p.series) {
      const found = samples.some(
        (x) => x.name === s.name && x.labels['site'] === site && s.labels.every((l) => x.labels[l] !== undefined),
      );
      if (!found) missing.push(`${p.title}: ${s.name}{${s.labels.join(',')}}`);
    }
  }
  return missing;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

async function provisionerWithMonitor(
  url: string,
  helper: HelperFunction,
): Promise<{ provisioner: Provisioner; monitor: MonitorServer }> {
  const registry = new Registry();
  const config = testConfig('site: dash\nworkers: 2\n');
  const provisioner = new Provisioner({ config, choria: testSettings(url, config), registry, helper });
  cleanups.push(() => provisioner.stop());
  const monitor = await startMonitorServer({
    port: 0,
    host: '127.0.0.1',
    registry,
    status: () => provisioner.status(),
  });
  cleanups.push(() => monitor.close());
  await provisioner.start();
  return { provisioner, monitor };
}

async function scrape(monitor: MonitorServer): Promise<string> {
  const res = await fetch(`${monitor.url}/metrics`);
  expect(res.status).toBe(200);
  return await res.text();
}

const panels = readDashboardPanels();

describe('examples/grafana/dashboard-metrics.json', () => {
  it('lists the metrics of every upstream panel, summaries as _sum and _count', () => {
    const bases = new Set(panels.flatMap((p) => p.series.map((s) => s.name.replace(/^choria_provisioner_/, ''))));
    expect([...bases].sort()).toEqual(
      [
        'discover_cycles',
        'discovered',
        'event_discovered',
        'rpc_time_sum',
        'rpc_time_count',
        'helper_time_sum',
        'helper_time_count',
        'busy_workers',
        'paused',
        'provisioned',
        'rpc_errors',
        'helper_errors',
        'discovery_errors',
        'provision_errors',
      ].sort(),
    );
    expect(panels.map((p) => `${p.row} / ${p.title}`)).toEqual([
      'top / Nodes Provisioned / Hour',
      'top / Busy Workers',
      'top / Circuit Breaker',
      'Processing Details / Discovery',
      'Processing Details / Events Processed',
      'Processing Details / RPC and Helper Times',
      'Processing Details / Busy Workers',
      'Errors / Errors',
    ]);
  });
});

describe('the upstream dashboard against /metrics', () => {
  it('with an empty fleet: every panel metric is declared with its type, and the unlabelled-by-rpc ones already have a site series', async () => {
    const server = await startNatsServer({ jetstream: false });
    cleanups.push(() => server.stop());
    const { provisioner, monitor } = await provisionerWithMonitor(server.url, () => ({ defer: true }));
    await provisioner.discover();
    const text = await scrape(monitor);
    const { types } = parseExposition(text);
    for (const s of panels.flatMap((p) => p.series)) expect(types.get(family(s)), family(s)).toBe(s.type);
    // Series that only exist once something was observed (as in the Go client): the RPC ones are
    // labelled per RPC and the helper summary has no zero observation.
    const needObservation = [
      'choria_provisioner_rpc_time_sum',
      'choria_provisioner_rpc_time_count',
      'choria_provisioner_rpc_errors',
      'choria_provisioner_helper_time_sum',
      'choria_provisioner_helper_time_count',
    ];
    const initial = panels.map((p) => ({ ...p, series: p.series.filter((s) => !needObservation.includes(s.name)) }));
    expect(missingSeries(initial, text, 'dash')).toEqual([]);
    expect(text).toMatch(/^choria_provisioner_discover_cycles\{site="dash"\} [1-9]/m);
    expect(text).toContain('choria_provisioner_paused{site="dash"} 0');
  });

  it('after provisioning a small fleet (one node failing its restart) every series of every panel is served with the site label', async () => {
    const server = await startNatsServer({ jetstream: false });
    cleanups.push(() => server.stop());
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      count: 4,
      token: 's3cret',
      timeScale: 0.01,
      control: false,
      eventFormat: 'none',
    });
    cleanups.push(() => fleet.stop());
    await fleet.waitForBooted(10_000);
    // node-4 is told to stay in provisioning mode, so the node refuses the restart: an RPC error.
    const helper: HelperFunction = (req) => ({
      configuration: {
        identity: req.identity,
        'plugin.choria.server.provision': req.identity === 'node-4.example.net' ? 'true' : 'false',
      },
    });
    const { monitor } = await provisionerWithMonitor(server.url, helper);

    const deadline = Date.now() + 20_000;
    let text = await scrape(monitor);
    while (missingSeries(panels, text, 'dash').length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      text = await scrape(monitor);
    }
    expect(missingSeries(panels, text, 'dash')).toEqual([]);
    expect(fleet.countByState().provisioned).toBe(3);
    expect(text).toContain('choria_provisioner_provisioned{site="dash"} 3');
    expect(text).toContain('choria_provisioner_rpc_errors{site="dash",rpc="choria_provision#restart"} 1');
    expect(text).toContain('choria_provisioner_provision_errors{site="dash"} 1');
    expect(text).toMatch(/^choria_provisioner_rpc_time_count\{site="dash",rpc="rpcutil#inventory"\} 4$/m);
    expect(text).toMatch(/^choria_provisioner_helper_time_count\{site="dash"\} 4$/m);
    // Go's default summaries export no quantiles; neither do we.
    expect(text).not.toMatch(/choria_provisioner_(rpc|helper)_time\{.*quantile=/);
  }, 40_000);
});

// ---- examples/grafana/choria-provisioner.json: the importable dashboard

interface DashTarget {
  expr: string;
  datasource?: { uid?: string };
}
interface DashPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: DashTarget[];
}
interface Dashboard {
  schemaVersion: number;
  __inputs: { type: string; pluginId: string }[];
  templating: { list: { type: string; name: string; query: unknown; datasource?: { uid?: string } }[] };
  panels: DashPanel[];
}

const dashboard = JSON.parse(
  readFileSync(new URL('../../examples/grafana/choria-provisioner.json', import.meta.url), 'utf8'),
) as Dashboard;
const queryPanels = dashboard.panels.filter((p) => p.type !== 'row');

/** A series a query needs: the metric as /metrics names it, and the labels it must carry. */
interface Needed {
  panel: string;
  metric: string;
  labels: string[];
}

// labels Prometheus adds when it scrapes, and histogram bucket bounds: never asked of /metrics by name
const SCRAPE_LABELS = new Set(['instance', 'job']);

/** The metrics each query names, with the labels its matchers and its `by (...)` clauses use. */
function neededSeries(panels: DashPanel[]): Needed[] {
  const out: Needed[] = [];
  for (const p of panels) {
    for (const t of p.targets ?? []) {
      const by = [...t.expr.matchAll(/\bby \(([^)]*)\)/g)].flatMap((m) => (m[1] ?? '').split(',').map((l) => l.trim()));
      for (const m of t.expr.matchAll(/\b((?:choria|nodejs)_[a-z0-9_]+)(?:\{([^}]*)\})?/g)) {
        const matched = [...(m[2] ?? '').matchAll(/([a-z_]+)\s*=~?/g)].map((l) => l[1] as string);
        const labels = [...new Set([...matched, ...by])].filter((l) => !SCRAPE_LABELS.has(l));
        out.push({ panel: p.title, metric: m[1] as string, labels });
      }
    }
  }
  return out;
}

describe('examples/grafana/choria-provisioner.json', () => {
  it('is a Grafana 10+ dashboard with a Prometheus data-source variable and a site variable', () => {
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    expect(dashboard.__inputs).toEqual([expect.objectContaining({ type: 'datasource', pluginId: 'prometheus' })]);
    const vars = Object.fromEntries(dashboard.templating.list.map((v) => [v.name, v]));
    expect(vars['datasource']).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(vars['site']).toMatchObject({
      type: 'query',
      datasource: { uid: '${datasource}' },
      query: { query: 'label_values(choria_provisioner_discover_cycles, site)' },
    });
    // every panel and query uses the variable, so importing asks for one data source only
    for (const p of queryPanels) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.datasource?.uid, p.title).toBe('${datasource}');
        if (/choria_provisioner_/.test(t.expr)) expect(t.expr, p.title).toContain('site=~"$site"');
      }
      expect(p.gridPos.x + p.gridPos.w, p.title).toBeLessThanOrEqual(24);
    }
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
  });

  it('has the upstream panels plus outcomes, queue, waiting nodes, helper latency, lost replies, leadership, event-loop lag and instances', () => {
    const titles = queryPanels.map((p) => p.title);
    for (const upstream of panels) expect(titles).toContain(upstream.title);
    expect(titles).toEqual(
      expect.arrayContaining([
        'Outcomes / Hour',
        'Queue',
        'Nodes Waiting',
        'Helper Latency',
        'Lost Replies',
        'Leader',
        'Event Loop Lag',
        'Owned Nodes per Instance',
        'Coordination Mode and Members',
        'Quarantined and Gone Nodes',
      ]),
    );
    const metrics = new Set(neededSeries(queryPanels).map((n) => n.metric));
    for (const m of [
      'choria_provisioner_outcomes',
      'choria_provisioner_queue_full',
      'choria_provisioner_waiting_nodes',
      'choria_provisioner_helper_duration_seconds_bucket',
      'choria_election_leader',
      'nodejs_eventloop_lag_p99_seconds',
      'choria_provisioner_owned_nodes',
      'choria_provisioner_coordination_mode',
      'choria_provisioner_coordination_members',
      'choria_provisioner_quarantined_nodes',
    ])
      expect(metrics).toContain(m);
  });

  it('queries only series that /metrics of a running provisioner serves, with the labels the queries use', async () => {
    const h = new FleetHarness();
    cleanups.push(() => h.cleanup());
    const server = await h.electionBroker();
    // one node loses its restart reply (lost_replies), another refuses its restart (rpc_errors):
    // a refusal is no successful action, so its reply is never the lost one; lifecycle events on,
    // so the lost reply is settled by the restart event
    const fleet = await h.fleet(server.url, {
      count: 4,
      eventFormat: 'choria',
      lostReplies: { nodes: 1, actions: ['restart'] },
    });
    await fleet.waitForBooted(10_000);
    const nodes = fleet
      .identities()
      .map((id) => ({ id, loses: (fleet.node(id)?.settings.lostReplyActions.size ?? 0) > 0 }));
    expect(nodes.filter((n) => n.loses)).toHaveLength(1);
    const refusing = nodes.find((n) => !n.loses)?.id;
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const helper: HelperFunction = (req) => ({
      configuration: {
        identity: req.identity,
        'plugin.choria.server.provision': req.identity === refusing ? 'true' : 'false',
      },
    });
    // a queue of one: a discovery of four nodes overflows it (queue_full)
    const provisioner = h.provisioner(server.url, 'site: dash\nworkers: 2\nleader_election: true\n', {
      registry,
      helper,
      queueCapacity: 1,
      electionSplayMs: 10,
      rpcTimeoutMs: 2000,
      lostReply: { actionDelayScale: 0.01, marginMs: 1000 },
    });
    const monitor = await startMonitorServer({
      port: 0,
      host: '127.0.0.1',
      registry,
      status: () => provisioner.status(),
    });
    cleanups.push(() => monitor.close());
    await provisioner.start();
    const nc = await connect({ servers: server.url, ...provisioningLogin(server) });
    cleanups.push(() => nc.close());
    nc.publish('choria.lifecycle.event.startup.provision_mode_server', new TextEncoder().encode('not json'));

    const needed = neededSeries(queryPanels);
    const missing = (text: string): string[] => {
      const { samples } = parseExposition(text);
      return needed
        .filter(
          (n) =>
            !samples.some(
              (s) =>
                s.name === n.metric &&
                (n.metric.startsWith('choria_provisioner_') ? s.labels['site'] === 'dash' : true) &&
                n.labels.every((l) => s.labels[l] !== undefined),
            ),
        )
        .map((n) => `${n.panel}: ${n.metric}{${n.labels.join(',')}}`);
    };
    let text = await scrape(monitor);
    // the assertion below names what is still missing when the wait runs out
    await until(
      'every series of the dashboard',
      async () => {
        if (provisioner.isLeader && provisioner.status({ limit: 0 }).busyWorkers === 0) await provisioner.discover();
        text = await scrape(monitor);
        return missing(text).length === 0;
      },
      50_000,
      { stepMs: 300 },
    ).catch(() => undefined);
    expect(
      missing(text),
      `leader: ${String(provisioner.isLeader)}, ${JSON.stringify(provisioner.status({ limit: 0 }))}`,
    ).toEqual([]);
    expect(needed.length).toBeGreaterThan(25);
  }, 90_000);
});

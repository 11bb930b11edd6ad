// One benchmark scenario in a fresh process, so the peak RSS (VmHWM) and the CPU time are those of
// one provisioner. Started by bench/run.mjs with a JSON spec as argv[2]; prints one line
// `BENCH-RESULT <json>` on stdout. The simulated fleet runs in its own process (lib/simulator.mjs).
//
// kinds:
//   provision  a Provisioner (in-process function helper, helper_mode pool, or one process per
//              node) provisions a fleet found by its start-up discovery
//   naive      the naive client of drivers.mjs (nats.js alone, one RPC after the other per worker)
//   limit      the limit driver of drivers.mjs (pre-built requests over a bare connection)
//   discovery  ChoriaClient.discover() against an idle fleet, repeated
//   queue      RSS of a Provisioner holding 50,000 offered identities that nobody answers
//   peer       the CLI (helper_mode process or pool) or the upstream Go provisioner as a process (peer.mjs)
// (the helper's bare start rate is measured by bare-start.mjs, a process without the provisioner)
import { performance } from 'node:perf_hooks';
import { clearInterval, clearTimeout, setInterval } from 'node:timers';
import { URL, fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { ChoriaClient, Provisioner, createLogger, parseSite, silentLogger } from '@choria-provisioner/core';
import { activeActiveScenario } from './active-active.mjs';
import { peerScenario } from './peer.mjs';
import { historyScaleScenario } from './history.mjs';
import { buildRequests, runLimit, runNaive } from './drivers.mjs';
import { startSimulator } from './lib/simulator.mjs';
import {
  cpuSecondsOf,
  liveChildrenCpuSeconds,
  machineBusySeconds,
  median,
  memoryFromProc,
  percentile,
  reapedChildrenCpuSeconds,
} from './lib/stats.mjs';
import { NodeTimes, timingLogger } from './lib/timing-logger.mjs';

const spec = JSON.parse(process.argv[2] ?? '{}');
const ROOT = fileURLToPath(new URL('..', import.meta.url));

const HELPERS = {
  pool: `${process.execPath} ${ROOT}examples/helpers/pool-helper.mjs`,
  'pool-sh': `${ROOT}examples/helpers/pool-helper.sh`,
  process: `${ROOT}bench/helpers/trivial-helper.sh`,
};

/** The in-process helper: what an embedding site would write, minus its CMDB lookup. */
function inProcessHelper(flow) {
  return (req) => ({
    configuration: {
      identity: req.identity,
      'plugin.choria.server.provision': 'false',
      'plugin.choria.middleware_hosts': 'nats://broker.example.net:4222',
      ...(flow === 'ed25519' ? { 'plugin.security.provider': 'choria' } : {}),
    },
  });
}

function provisionerYaml(s) {
  const lines = [
    'site: bench',
    'token: s3cret',
    `workers: ${s.workers}`,
    'interval: 1m',
    `loglevel: ${s.loglevel ?? 'info'}`,
    // memory unless the scenario measures the bucket: every other figure stays comparable with runs before it
    `history_store: ${s.history ?? 'memory'}`,
    // a fresh bucket a pass: a second pass must not start by loading the first one's records
    ...(s.history === 'kv' ? [`history_bucket: BENCH_${process.pid}`] : []),
  ];
  if (s.helper !== 'function') {
    lines.push(`helper: ${JSON.stringify(HELPERS[s.helper])}`);
    if (s.helper === 'pool' || s.helper === 'pool-sh')
      lines.push('helper_mode: pool', `helper_pool_size: ${s.poolSize}`, `helper_pool_depth: ${s.poolDepth ?? 1}`);
  }
  if (s.flow === 'ed25519') {
    lines.push(
      'choria_insecure: false',
      `jwt_verify_cert: ${s.keys.orgPublic}`,
      `jwt_signing_key: ${s.keys.provSeedFile}`,
      `jwt_signing_token: ${s.keys.clientJwtFile}`,
      'features:',
      '  jwt: true',
      '  ed25519: true',
    );
  } else if (s.flow === 'jwt') {
    // protocol v1, unsigned, but every node's provisioning JWT fetched and verified
    lines.push('choria_insecure: true', `jwt_verify_cert: ${s.keys.orgPublic}`, 'features:', '  jwt: true');
  } else {
    lines.push('choria_insecure: true');
  }
  return `${lines.join('\n')}\n`;
}

/** The site's config and Choria settings (the provisioner overrides applied by parseSite). */
function siteFor(s, yaml, opts) {
  const choria =
    s.flow === 'ed25519'
      ? [
          'identity = bench-provisioner.example.net',
          `plugin.choria.middleware_hosts = ${s.url}`,
          'plugin.security.provider = choria',
          `plugin.security.choria.token_file = ${s.keys.clientJwtFile}`,
          `plugin.security.choria.seed_file = ${s.keys.provSeedFile}`,
        ].join('\n')
      : [
          `identity = bench-provisioner.example.net`,
          `plugin.choria.middleware_hosts = ${s.url}`,
          'plugin.security.provider = file',
        ].join('\n');
  const site = parseSite({ yaml, yamlSource: 'bench.yaml', choria, choriaSource: 'bench-choria.cfg' }, opts);
  // requests are signed (ed25519 flow) but the private broker speaks plain TCP
  return { config: site.config, choria: { ...site.choria, tls: false } };
}

function innerLogger(kind) {
  if (kind === 'winston-silent') return silentLogger();
  if (kind?.startsWith('winston-file:'))
    return createLogger({ logfile: kind.slice('winston-file:'.length), loglevel: 'info', site: 'bench' });
  return undefined;
}

function out(result) {
  process.stdout.write(`BENCH-RESULT ${JSON.stringify(result)}\n`);
}

/** Starts the clocks and CPU counters of a run; finish() returns the figures every run reports. */
function startMeasure(s, sim) {
  const simCpu0 = cpuSecondsOf(sim.pid);
  const natsCpu0 = cpuSecondsOf(s.natsPid);
  const reaped0 = reapedChildrenCpuSeconds();
  const busy0 = machineBusySeconds();
  const cpu0 = process.cpuUsage();
  let rssMax = 0;
  const sampler = setInterval(() => {
    rssMax = Math.max(rssMax, process.memoryUsage.rss());
  }, 100);
  const t0 = performance.now();
  return {
    t0,
    finish() {
      const cpu = process.cpuUsage(cpu0);
      const busy = machineBusySeconds() - busy0;
      const windowS = (performance.now() - t0) / 1000;
      clearInterval(sampler);
      const simCpu = cpuSecondsOf(sim.pid) - simCpu0;
      const natsCpu = cpuSecondsOf(s.natsPid) - natsCpu0;
      // helpers: processes already reaped (one per node) plus live ones (a pool), not the simulator
      const helperCpu = reapedChildrenCpuSeconds() - reaped0 + liveChildrenCpuSeconds([sim.pid]);
      const mem = memoryFromProc();
      const cpuS = (cpu.user + cpu.system) / 1e6;
      return {
        peakRssMb: Math.max(mem.peakRssMb, rssMax / 1048576),
        rssEndMb: mem.rssMb,
        cpuS,
        simCpuS: simCpu,
        natsCpuS: natsCpu,
        helperCpuS: helperCpu,
        // everything else the machine did meanwhile (other users of the 2 cores), in cores
        backgroundCores: (busy - cpuS - simCpu - natsCpu - helperCpu) / windowS,
      };
    },
  };
}

/** The figures every provisioning run reports, from its counts, times and the simulator's summary. */
function rates({ provisioned, wallMs, phaseMs, durations, figures, summary }) {
  return {
    wallMs,
    nodesPerMin: (provisioned / wallMs) * 60_000,
    phaseNodesPerMin: (provisioned / phaseMs) * 60_000,
    p50Ms: percentile(durations, 50),
    p99Ms: percentile(durations, 99),
    ...figures,
    sim: {
      provisioned: summary.totals.byState.provisioned ?? 0,
      violations: summary.totals.violations,
      violationsByKind: summary.totals.violationsByKind,
    },
  };
}

async function provisionScenario(s) {
  const sim = await startSimulator({
    url: s.url,
    count: s.count,
    flow: s.flow,
    keys: s.keys,
    nodesPerConnection: s.nodesPerConnection,
    timeScale: s.timeScale,
  });
  const { config, choria } = siteFor(s, provisionerYaml(s), { requireHelper: s.helper !== 'function' });
  const times = new NodeTimes();
  const logger = timingLogger(times, innerLogger(s.logger));
  const p = new Provisioner({
    config,
    choria,
    logger,
    registry: new Registry(),
    ...(s.helper === 'function' ? { helper: inProcessHelper(s.flow) } : {}),
    ...(s.holdMs !== undefined ? { holdMs: s.holdMs } : {}),
  });

  const measure = startMeasure(s, sim);
  const { t0 } = measure;
  let target = s.count;
  const done = new Promise((resolve) => {
    times.onFinish = (n) => {
      if (n >= target) resolve();
    };
  });
  await p.start();
  const discovered = [await p.discover()];
  const tDiscovered = performance.now();
  // A node missed by a discovery is found by the next one (upstream: after `interval`; here at once).
  while (discovered.reduce((a, b) => a + b, 0) < s.count && discovered.length < 4) {
    await new Promise((resolve) => {
      const tick = setInterval(() => {
        const st = p.status({ limit: 0 });
        if (st.queue === 0 && st.busyWorkers === 0) {
          clearInterval(tick);
          resolve();
        }
      }, 100);
    });
    discovered.push(await p.discover());
  }
  target = Math.min(
    target,
    discovered.reduce((a, b) => a + b, 0),
  );
  if (times.finished.size + times.failed >= target) times.onFinish(times.finished.size + times.failed);
  const deadline = setTimeout(() => times.onFinish(Infinity), s.timeoutMs ?? 300_000);
  await done;
  clearTimeout(deadline);
  const tEnd = times.lastEndAt ?? performance.now();
  const figures = measure.finish();
  // what stays on the heap with every node still held after success (needs --expose-gc)
  globalThis.gc?.();
  const retained = {
    heapAfterGcMb: process.memoryUsage().heapUsed / 1048576,
    held: p.status({ limit: 0 }).hostCounts.held ?? 0,
  };
  await p.stop();

  const summary = await sim.waitFor((x) => (x.totals.byState.provisioned ?? 0) >= times.finished.size, 20_000);
  await sim.stop();

  const d = times.durations();
  const provisioned = times.finished.size;
  const wallMs = tEnd - t0;
  const phaseMs = tEnd - (times.firstStartAt ?? tEnd);
  return {
    kind: 'provision',
    flow: s.flow,
    helper: s.helper,
    count: s.count,
    workers: s.workers,
    poolSize: s.poolSize,
    nodesPerConnection: s.nodesPerConnection,
    logger: s.logger ?? 'none',
    discovered,
    discoveryMs: tDiscovered - t0,
    ...retained,
    provisioned,
    failed: times.failed,
    firstErrors: times.firstErrors,
    warnings: times.warnings,
    firstWarnings: times.firstWarnings,
    ...rates({ provisioned, wallMs, phaseMs, durations: d, figures, summary }),
  };
}

/** The naive client or the limit driver (drivers.mjs) against the same fleet, measured the same way. */
async function driverScenario(s) {
  const sim = await startSimulator({
    url: s.url,
    count: s.count,
    flow: s.flow,
    keys: s.keys,
    nodesPerConnection: s.nodesPerConnection,
    timeScale: s.timeScale,
  });
  // the limit's requests are built before the clock starts, for the simulator's identities
  const built =
    s.kind === 'limit'
      ? buildRequests(
          s.flow,
          Array.from({ length: s.count }, (_, i) => `node-${i + 1}.example.net`),
          { keys: s.keys },
        )
      : undefined;
  const measure = startMeasure(s, sim);
  let run;
  let phaseStart = measure.t0;
  if (built !== undefined) {
    run = await runLimit(s.url, built, s.workers);
  } else {
    run = await runNaive(s.url, s.flow, s.workers, s.keys);
    phaseStart = run.discoveredAt;
  }
  const tEnd = performance.now();
  const figures = measure.finish();
  const summary = await sim.waitFor((x) => (x.totals.byState.provisioned ?? 0) >= run.provisioned, 20_000);
  await sim.stop();
  const wallMs = tEnd - measure.t0;
  return {
    kind: 'provision',
    flow: s.flow,
    helper: s.kind,
    count: s.count,
    workers: s.workers,
    nodesPerConnection: s.nodesPerConnection,
    discovered: [run.discovered ?? s.count],
    discoveryMs: phaseStart - measure.t0,
    provisioned: run.provisioned,
    failed: run.failed,
    firstErrors: run.firstErrors,
    ...rates({
      provisioned: run.provisioned,
      wallMs,
      phaseMs: tEnd - phaseStart,
      durations: run.durations,
      figures,
      summary,
    }),
  };
}

async function discoveryScenario(s) {
  const sim = await startSimulator({
    url: s.url,
    count: s.count,
    flow: s.flow,
    keys: s.keys,
    nodesPerConnection: s.nodesPerConnection,
    timeScale: s.timeScale,
  });
  const { choria } = siteFor(s, provisionerYaml({ ...s, helper: 'function', workers: 1 }), { requireHelper: false });
  const client = await ChoriaClient.connect(choria, { logger: silentLogger(), name: 'bench-discovery' });
  const runs = [];
  for (let i = 0; i < (s.repeat ?? 3); i++) {
    const t = performance.now();
    const found = await client.discover({ agent: 'choria_provision' });
    runs.push({ ms: performance.now() - t, found: found.length });
    await new Promise((r) => setTimeout(r, 300));
  }
  await client.close();
  await sim.stop();
  return { kind: 'discovery', flow: s.flow, count: s.count, runs, windowMs: 300 };
}

async function queueScenario(s) {
  const { config, choria } = siteFor(s, provisionerYaml({ ...s, helper: 'function' }), { requireHelper: false });
  const times = new NodeTimes();
  const p = new Provisioner({
    config,
    choria,
    logger: timingLogger(times, innerLogger(s.logger)),
    registry: new Registry(),
    helper: inProcessHelper(s.flow),
  });
  await p.start();
  await p.discover(); // nothing answers: an empty fleet
  globalThis.gc?.();
  await new Promise((r) => setTimeout(r, 200));
  const before = memoryFromProc();
  const heapBefore = process.memoryUsage().heapUsed;
  let offered = 0;
  for (let i = 1; i <= s.count; i++) if (p.offer(`node-${i}.example.net`, 'discovery')) offered++;
  await new Promise((r) => setTimeout(r, 500));
  const st = p.status({ limit: 0 });
  const rawAfter = memoryFromProc();
  globalThis.gc?.();
  await new Promise((r) => setTimeout(r, 200));
  const after = memoryFromProc();
  const heapAfter = process.memoryUsage().heapUsed;
  await p.stop();
  return {
    kind: 'queue',
    count: s.count,
    workers: s.workers,
    offered,
    queued: st.queue,
    busy: st.busyWorkers,
    waiting: st.hostCounts,
    rssBeforeMb: before.rssMb,
    rssAfterMb: after.rssMb,
    rssAfterNoGcMb: rawAfter.rssMb,
    peakRssMb: after.peakRssMb,
    heapDeltaMb: (heapAfter - heapBefore) / 1048576,
  };
}

/**
 * What the status page costs the provisioner with `count` nodes on the list: /status with the
 * counts only, and /nodes pages (sorted by identity, by last change, filtered and searched), each
 * timed over repeats. Nobody answers: the workers' attempts wait until stop().
 */
async function nodesPageScenario(s) {
  const { config, choria } = siteFor(s, provisionerYaml({ ...s, helper: 'function' }), { requireHelper: false });
  const p = new Provisioner({
    config,
    choria,
    logger: silentLogger(),
    registry: new Registry(),
    queueCapacity: s.count,
    helper: inProcessHelper(s.flow),
    hostRunner: (job) =>
      new Promise((resolve) =>
        job.signal.addEventListener('abort', () => resolve({ outcome: 'stale', message: 'stopped' }), { once: true }),
      ),
  });
  await p.start();
  for (let i = 1; i <= s.count; i++) p.offer(`node-${i}.example.net`, 'discovery');
  await new Promise((r) => setTimeout(r, 300));
  const time = (f) => {
    const ms = [];
    for (let i = 0; i < s.repeat; i++) {
      const t0 = performance.now();
      f();
      ms.push(performance.now() - t0);
    }
    return median(ms);
  };
  const page = (q) => () => p.nodes({ sort: 'identity', order: 'asc', offset: 0, limit: 100, ...q });
  const result = {
    kind: 'nodes-page',
    count: s.count,
    listed: p.status({ limit: 0 }).hostCounts,
    statusCountsMs: time(() => p.status({ limit: 0 })),
    byIdentityMs: time(page({})),
    byUpdatedDescLastPageMs: time(page({ sort: 'updatedAt', order: 'desc', offset: s.count - 100 })),
    filteredMs: time(page({ state: 'queued' })),
    searchedMs: time(page({ search: 'node-99' })),
    pageBytes: JSON.stringify(page({})()).length,
  };
  await p.stop();
  return result;
}

const kinds = {
  provision: provisionScenario,
  naive: driverScenario,
  limit: driverScenario,
  discovery: discoveryScenario,
  queue: queueScenario,
  'active-active': activeActiveScenario,
  'history-scale': historyScaleScenario,
  'nodes-page': nodesPageScenario,
  peer: peerScenario,
};

kinds[spec.kind](spec).then(
  (result) => {
    out(result);
    process.exit(0);
  },
  (err) => {
    process.stderr.write(`scenario ${spec.kind} failed: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);

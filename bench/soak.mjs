#!/usr/bin/env node
// Soak run (not in CI): `npm run soak -- --minutes 30`. One process with several sites (two by
// default), as `choria-provisioner run` with two configs is: each site has its own private
// nats-server (JetStream on: the node history lives in its bucket) and a simulated fleet in its
// own process whose nodes keep coming back into provisioning mode after they were provisioned (as
// after an expired certificate or token), losing 2 % of the requests they receive. Every few
// minutes each broker is killed and restarted, and every few minutes (on another period) the
// provisioners are stopped and started again, as a rolling upgrade does. Every minute it prints
// RSS (anonymous and file-backed), external memory, the heap (used, committed, young generation),
// event-loop delay p99, nodes/min, failed and cancelled attempts, and the longest a node has been
// waiting in provisioning mode. It fails (exit 1) when RSS grows by more than 10 % after the
// warm-up, when any node is configured twice in one provisioning cycle, when a fleet recorded a
// protocol violation, or when a node waited longer than --stuck-after (stuck).
//
// `npm run soak` caps V8's young generation (--max-semi-space-size=16, the most Node 22 used on
// 64-bit): Node 24's V8 grows it up to 64 MB per semi-space after a burst of allocation (a broker
// restart is one) on a machine with much memory, and keeps it. That is bounded GC sizing, not
// growth, but it adds up to ~70 MB of RSS in one step and would hide or fake a leak; with the cap
// RSS shows what the provisioner keeps. Run `node --expose-gc bench/soak.mjs` for V8's default.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { parseArgs } from 'node:util';
import { URL, fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { Provisioner, createLogger, parseDuration, parseSite } from '../packages/core/dist/index.js';
import { startNatsServer } from './lib/nats-server.mjs';
import { startSimulator } from './lib/simulator.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const { values: opt } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    sites: { type: 'string', default: '2' },
    nodes: { type: 'string', default: '1000' },
    workers: { type: 'string', default: '50' },
    'drop-rate': { type: 'string', default: '0.02' },
    'broker-restart-every': { type: 'string', default: '5' },
    'provisioner-restart-every': { type: 'string', default: '7' },
    'reenter-after': { type: 'string', default: '90s' },
    'warmup-minutes': { type: 'string', default: '5' },
    'stuck-after': { type: 'string', default: '4m' },
    history: { type: 'string', default: 'kv' },
    help: { type: 'boolean', default: false },
  },
});
if (opt.help) {
  process.stdout.write(
    'usage: npm run soak -- [--minutes 30] [--sites 2] [--nodes 1000 (per site)] [--workers 50] [--drop-rate 0.02]\n' +
      '                       [--broker-restart-every 5 (minutes)] [--provisioner-restart-every 7 (minutes)]\n' +
      '                       [--reenter-after 90s] [--warmup-minutes 5] [--stuck-after 4m] [--history kv|memory]\n',
  );
  process.exit(0);
}
const minutes = Number(opt.minutes);
const sites = Number(opt.sites);
const nodes = Number(opt.nodes);
const warmup = Number(opt['warmup-minutes']);
const restartEvery = Number(opt['broker-restart-every']);
const provisionerEvery = Number(opt['provisioner-restart-every']);
const stuckAfterMs = parseDuration(opt['stuck-after']);
for (const [k, v] of Object.entries({
  minutes,
  sites,
  nodes,
  warmup,
  restartEvery,
  provisionerEvery,
  workers: Number(opt.workers),
  dropRate: Number(opt['drop-rate']),
})) {
  if (!Number.isFinite(v) || v < 0) {
    process.stderr.write(`soak: --${k} must be a non-negative number\n`);
    process.exit(2);
  }
}
if (!['kv', 'memory'].includes(opt.history)) {
  process.stderr.write('soak: --history must be kv or memory\n');
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), 'cpts-soak-'));
const logFile = join(dir, 'provisioner.log');
const siteNames = Array.from({ length: sites }, (_, i) => `soak${i + 1}`);
const brokers = [];
const sims = [];
const stopAll = async () => {
  for (const sim of sims) await sim.stop().catch(() => undefined);
  for (const b of brokers) await b.stop().catch(() => undefined);
};
for (const sig of ['SIGHUP', 'SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    process.stderr.write(`soak: ${sig}, stopping\n`);
    void stopAll().finally(() => process.exit(1));
  });
}

for (const name of siteNames) {
  const nats = await startNatsServer();
  brokers.push(nats);
  sims.push(
    await startSimulator({
      url: nats.url,
      count: nodes,
      flow: 'plain',
      name,
      timeScale: 0.05, // restarts take 100 ms instead of 2 s
      extraArgs: [
        '--identity-pattern',
        `${name}-node-{i}.example.net`,
        '--event-format',
        'cloudevents',
        '--drop-rate',
        opt['drop-rate'],
        '--reenter-after',
        opt['reenter-after'],
        '--boot-spread',
        '20s',
      ],
    }),
  );
}

// One registry for every site and every restart, as one long-lived process would export; the
// counters carry on across the provisioners' restarts.
const registry = new Registry();
const logger = createLogger({ logfile: logFile, loglevel: 'info', site: 'soak' });
const siteConfigs = siteNames.map((name, i) => {
  const yaml = [
    `site: ${name}`,
    'token: s3cret',
    'choria_insecure: true',
    `workers: ${opt.workers}`,
    'interval: 1m',
    `helper: ${JSON.stringify(`${process.execPath} ${ROOT}examples/helpers/pool-helper.mjs`)}`,
    'helper_mode: pool',
    'helper_pool_size: 2',
    `history_store: ${opt.history}`,
    'loglevel: info',
    `logfile: ${logFile}`,
    '',
  ].join('\n');
  const choriaText = [
    `identity = ${name}-provisioner.example.net`,
    `plugin.choria.middleware_hosts = ${brokers[i].url}`,
    'plugin.security.provider = file',
  ].join('\n');
  const { config, choria } = parseSite({
    yaml,
    yamlSource: `${name}.yaml`,
    choria: choriaText,
    choriaSource: `${name}-choria.cfg`,
  });
  return { config, choria: { ...choria, tls: false } };
});
const startProvisioners = async () => {
  const ps = siteConfigs.map(
    ({ config, choria }) => new Provisioner({ config, choria, registry, logger: logger.child({ site: config.site }) }),
  );
  await Promise.all(ps.map((p) => p.start()));
  return ps;
};
let provisioners = await startProvisioners();

const eld = monitorEventLoopDelay({ resolution: 10 });
eld.enable();
const metric = async (name, labels = {}) => {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? [])
    .filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want))
    .reduce((a, v) => a + v.value, 0);
};
const gc = globalThis.gc;
const semiSpaceFlag = [...process.execArgv, ...(process.env['NODE_OPTIONS'] ?? '').split(/\s+/)].find((a) =>
  a.startsWith('--max-semi-space-size'),
);
/** RssAnon and RssFile of this process (Linux), in MB; undefined elsewhere. */
const residentBreakdown = () => {
  try {
    const status = readFileSync('/proc/self/status', 'utf8');
    const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
    return { anonMb: kb('RssAnon') / 1024, fileMb: kb('RssFile') / 1024 };
  } catch {
    return undefined;
  }
};
const mb = (b) => (b / 1048576).toFixed(1);
const fmtMin = (ms) => (ms / 60_000).toFixed(1);

/** Every site's fleet summary, summed; undefined when one could not be read (a broker restart). */
const fleetTotals = async () => {
  const all = [];
  for (const sim of sims) {
    try {
      all.push((await sim.summary()).totals);
    } catch {
      return undefined;
    }
  }
  const sum = (k) => all.reduce((a, t) => a + (t[k] ?? 0), 0);
  const max = (k) => all.reduce((a, t) => Math.max(a, t[k] ?? 0), 0);
  const byKind = {};
  for (const t of all) for (const [k, v] of Object.entries(t.violationsByKind)) byKind[k] = (byKind[k] ?? 0) + v;
  const configures = all.reduce((a, t) => a + (t.rpcCounts['choria_provision#configure'] ?? 0), 0);
  return {
    cycles: sum('cycles'),
    dropped: sum('dropped'),
    violations: sum('violations'),
    violationsByKind: byKind,
    maxConfiguredPerCycle: max('maxConfiguredPerCycle'),
    longestWaitingMs: max('longestWaitingMs'),
    longestWaitMs: max('longestWaitMs'),
    configures,
  };
};

process.stdout.write(
  `soak: ${minutes} min, ${sites} sites in one process x ${nodes} nodes re-entering provisioning after ${opt['reenter-after']} (+-50 %), ${Number(opt['drop-rate']) * 100} % request loss, ` +
    `each broker restarted every ${restartEvery} min, the provisioners every ${provisionerEvery} min, ${opt.workers} workers and a pool helper x2 per site, history ${opt.history}; log ${logFile}${gc === undefined ? '' : '; RSS after a full GC'}; ` +
    `young generation ${semiSpaceFlag === undefined ? "at V8's default size (Node 24 grows it to 64 MB semi-spaces under load)" : `capped (${semiSpaceFlag})`}\n`,
);
process.stdout.write(
  'min   rss MB  anon MB  file MB  ext MB  v8 malloc MB  heap MB (committed, new space)  eld p99 ms  nodes/min  failed  cancelled  lost replies (acted/not/gone/unsure)  cycles  max conf/cycle  longest waiting min  violations\n',
);

const samples = [];
let last = { provisioned: 0, failed: 0, cancelled: 0 };
let brokerRestarts = 0;
let provisionerRestarts = 0;
const started = Date.now();
const at = (minute) => started + minute * 60_000;
const sleepUntil = (t) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));
for (let minute = 1; minute <= minutes; minute++) {
  // Restarts fall inside the minute, so each minute's figures include them; the brokers go in the
  // middle (one site after the other), the provisioners at three quarters.
  const events = [];
  if (restartEvery > 0 && minute % restartEvery === 0) {
    brokers.forEach((b, i) =>
      events.push({ t: at(minute - 0.5) + i * 10_000, what: 'broker', run: () => b.restart() }),
    );
  }
  if (provisionerEvery > 0 && minute % provisionerEvery === 0) {
    events.push({
      t: at(minute - 0.25),
      what: 'provisioners',
      run: async () => {
        await Promise.all(provisioners.map((p) => p.stop()));
        provisioners = await startProvisioners();
      },
    });
  }
  events.sort((a, b) => a.t - b.t);
  for (const ev of events) {
    await sleepUntil(ev.t);
    await ev.run();
    if (ev.what === 'broker') brokerRestarts++;
    else provisionerRestarts++;
  }
  await sleepUntil(at(minute));
  gc?.();
  const mem = process.memoryUsage();
  const own = residentBreakdown();
  const now = {
    provisioned: await metric('choria_provisioner_outcomes', { outcome: 'provisioned' }),
    failed: await metric('choria_provisioner_outcomes', { outcome: 'failed' }),
    cancelled: await metric('choria_provisioner_outcomes', { outcome: 'cancelled' }),
  };
  const lost = {
    acted: await metric('choria_provisioner_lost_replies', { finding: 'acted' }),
    not: await metric('choria_provisioner_lost_replies', { finding: 'not_acted' }),
    gone: await metric('choria_provisioner_lost_replies', { finding: 'gone' }),
    unsure: await metric('choria_provisioner_lost_replies', { finding: 'unsure' }),
  };
  const t = await fleetTotals();
  const sample = {
    minute,
    rssMb: mem.rss / 1048576,
    heapMb: mem.heapUsed / 1048576,
    // where the resident memory is: anonymous (heap, malloc, buffers) or file-backed (the node binary, libraries)
    anonMb: own?.anonMb,
    fileMb: own?.fileMb,
    externalMb: mem.external / 1048576,
    v8MallocMb: getHeapStatistics().malloced_memory / 1048576,
    // the heap as committed (what RSS sees), and its young generation, which V8 grows under load
    heapTotalMb: mem.heapTotal / 1048576,
    newSpaceMb: (getHeapSpaceStatistics().find((x) => x.space_name === 'new_space')?.space_size ?? 0) / 1048576,
    arrayBuffersMb: mem.arrayBuffers / 1048576,
    eldP99Ms: eld.percentile(99) / 1e6,
    nodesPerMin: now.provisioned - last.provisioned,
    failed: now.failed - last.failed,
    cancelled: now.cancelled - last.cancelled,
    lost,
    cycles: t?.cycles,
    maxConfiguredPerCycle: t?.maxConfiguredPerCycle,
    longestWaitingMs: t?.longestWaitingMs,
    violations: t?.violations,
    violationsByKind: t?.violationsByKind,
    restarts: events.map((e) => e.what),
  };
  samples.push(sample);
  last = now;
  eld.reset();
  process.stdout.write(
    `${String(minute).padStart(3)}  ${mb(mem.rss).padStart(7)}  ${(own?.anonMb.toFixed(1) ?? '?').padStart(7)}  ${(own?.fileMb.toFixed(1) ?? '?').padStart(7)}  ${mb(mem.external).padStart(6)}  ${sample.v8MallocMb.toFixed(1).padStart(12)}  ${`${mb(mem.heapUsed)} (${mb(mem.heapTotal)}, ${sample.newSpaceMb.toFixed(1)})`.padStart(30)}  ${sample.eldP99Ms.toFixed(1).padStart(10)}  ` +
      `${String(sample.nodesPerMin).padStart(9)}  ${String(sample.failed).padStart(6)}  ${String(sample.cancelled).padStart(9)}  ${`${lost.acted}/${lost.not}/${lost.gone}/${lost.unsure}`.padStart(36)}  ` +
      `${String(t?.cycles ?? '?').padStart(6)}  ${String(t?.maxConfiguredPerCycle ?? '?').padStart(14)}  ${(t === undefined ? '?' : fmtMin(t.longestWaitingMs)).padStart(19)}  ${String(t?.violations ?? '?').padStart(10)}` +
      `${events.length > 0 ? `  (restarted: ${events.map((e) => e.what).join(', ')})` : ''}\n`,
  );
}

let final;
for (let i = 0; i < 10 && final === undefined; i++) {
  final = await fleetTotals();
  if (final === undefined) await new Promise((r) => setTimeout(r, 1000));
}
// the nodes behind a failed check, for the log
const suspects = [];
if ((final?.maxConfiguredPerCycle ?? 0) > 1 || (final?.longestWaitingMs ?? 0) > stuckAfterMs) {
  for (const sim of sims) {
    for (let offset = 0; offset < nodes; offset += 200) {
      for (const n of await sim.nodes(offset, 200).catch(() => []))
        if (n.maxConfiguredPerCycle > 1 || n.waitingForMs > stuckAfterMs) suspects.push(n);
    }
  }
}
await Promise.all(provisioners.map((p) => p.stop()));
await stopAll();

const problems = [];
const base = samples.find((s) => s.minute === warmup);
if (base !== undefined) {
  const later = samples.filter((s) => s.minute > warmup);
  const peak = later.reduce((m, s) => Math.max(m, s.rssMb), 0);
  const growth = peak / base.rssMb - 1;
  process.stdout.write(
    `RSS after minute ${warmup}: ${base.rssMb.toFixed(1)} MB; highest later: ${peak.toFixed(1)} MB (${(growth * 100).toFixed(1)} %)\n`,
  );
  if (growth > 0.1) problems.push(`RSS grew by ${(growth * 100).toFixed(1)} % after minute ${warmup} (limit 10 %)`);
} else {
  process.stdout.write(`(shorter than ${warmup} minutes: no RSS growth check)\n`);
}
if (final === undefined) problems.push('could not read the final fleet reports');
else {
  if (final.maxConfiguredPerCycle > 1) {
    const who = suspects
      .filter((n) => n.maxConfiguredPerCycle > 1)
      .map((n) => `${n.identity} (cycle ${n.cycle}, ${n.configuredCount} configures, ${n.restartCount} restarts)`)
      .join(', ');
    problems.push(`a node was configured ${final.maxConfiguredPerCycle} times in one provisioning cycle: ${who}`);
  }
  if (final.longestWaitMs > stuckAfterMs) {
    const who = suspects
      .filter((n) => n.waitingForMs > stuckAfterMs)
      .map((n) => `${n.identity} (waiting ${fmtMin(n.waitingForMs)} min)`)
      .join(', ');
    problems.push(
      `a node waited ${fmtMin(final.longestWaitMs)} min in provisioning mode (stuck: more than ${opt['stuck-after']})${who === '' ? '' : `: ${who}`}`,
    );
  }
  // A restart refused because the node is not configured yet is the provisioner's deliberate
  // check after a configure reply lost with the broker (docs/protocol.md, "Lost replies"):
  // reported, not a failure. Every other kind is.
  const { 'restart-refused': refusedRestarts = 0, ...others } = final.violationsByKind;
  const otherCount = Object.values(others).reduce((a, b) => a + b, 0);
  if (otherCount > 0) problems.push(`the fleets recorded ${otherCount} protocol violations: ${JSON.stringify(others)}`);
  process.stdout.write(
    `restarts used as the check after a configure reply lost with the broker, refused by nodes not yet configured: ${refusedRestarts}\n`,
  );
  process.stdout.write(
    `fleets: ${final.cycles} re-provisioning cycles, ${final.configures} configures, ${final.dropped} requests lost, ${brokerRestarts} broker restarts, ${provisionerRestarts} provisioner restarts; ` +
      `longest wait in provisioning mode ${fmtMin(final.longestWaitMs)} min, longest still waiting at the end ${fmtMin(final.longestWaitingMs)} min\n`,
  );
}
const rates = samples
  .slice(1)
  .map((s) => s.nodesPerMin)
  .sort((a, b) => a - b);
const eldP99 = samples.map((s) => s.eldP99Ms).sort((a, b) => a - b);
const med = (v) => (v.length === 0 ? NaN : v[Math.floor(v.length / 2)]);
process.stdout.write(
  `median nodes/min ${med(rates)}, median event-loop delay p99 ${med(eldP99).toFixed(1)} ms, total failed ${last.failed}, total cancelled ${last.cancelled}\n`,
);
process.stdout.write(
  `SOAK-RESULT ${JSON.stringify({ minutes, sites, nodes, youngGeneration: semiSpaceFlag ?? 'default', brokerRestarts, provisionerRestarts, samples, problems })}\n`,
);
if (problems.length > 0) {
  for (const pr of problems) process.stdout.write(`FAIL: ${pr}\n`);
  process.stdout.write(`log kept in ${logFile}\n`);
  process.exit(1);
}
rmSync(dir, { recursive: true, force: true });
process.stdout.write('PASS\n');
process.exit(0);

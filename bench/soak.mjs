#!/usr/bin/env node
// Soak run (not in CI): `npm run soak -- --minutes 30`. A private nats-server, a simulated fleet in
// its own process whose nodes keep coming back into provisioning mode after they were provisioned
// (as after an expired certificate or token), 2 % of requests lost, the broker killed and restarted
// every few minutes, and a Provisioner in this process with the example pool helper. Every minute
// it prints RSS, heap, event-loop delay p99 and nodes/min. It fails (exit 1) when RSS grows by more
// than 10 % after the first five minutes, when any node is configured twice in one provisioning
// cycle, or when the fleet recorded any protocol violation.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { URL, fileURLToPath } from 'node:url';
import {
  Provisioner,
  Registry,
  createLogger,
  parseSite,
} from '../packages/core/dist/index.js';
import { startNatsServer } from './lib/nats-server.mjs';
import { startSimulator } from './lib/simulator.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const { values: opt } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    nodes: { type: 'string', default: '2000' },
    workers: { type: 'string', default: '50' },
    'drop-rate': { type: 'string', default: '0.02' },
    'broker-restart-every': { type: 'string', default: '4' },
    'reenter-after': { type: 'string', default: '90s' },
    'warmup-minutes': { type: 'string', default: '5' },
    help: { type: 'boolean', default: false },
  },
});
if (opt.help) {
  process.stdout.write(
    'usage: npm run soak -- [--minutes 30] [--nodes 2000] [--workers 50] [--drop-rate 0.02]\n' +
      '                       [--broker-restart-every 4 (minutes)] [--reenter-after 90s] [--warmup-minutes 5]\n',
  );
  process.exit(0);
}
const minutes = Number(opt.minutes);
const nodes = Number(opt.nodes);
const warmup = Number(opt['warmup-minutes']);
const restartEvery = Number(opt['broker-restart-every']);
for (const [k, v] of Object.entries({ minutes, nodes, warmup, restartEvery, workers: Number(opt.workers), dropRate: Number(opt['drop-rate']) })) {
  if (!Number.isFinite(v) || v < 0) {
    process.stderr.write(`soak: --${k} must be a non-negative number\n`);
    process.exit(2);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'cpts-soak-'));
const logFile = join(dir, 'provisioner.log');
const nats = await startNatsServer();
const children = { sim: undefined };
const stopAll = async () => {
  await children.sim?.stop().catch(() => undefined);
  await nats.stop().catch(() => undefined);
};
for (const sig of ['SIGHUP', 'SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    process.stderr.write(`soak: ${sig}, stopping\n`);
    void stopAll().finally(() => process.exit(1));
  });
}

const sim = await startSimulator({
  url: nats.url,
  count: nodes,
  flow: 'plain',
  timeScale: 0.05, // restarts take 100 ms instead of 2 s
  extraArgs: ['--event-format', 'cloudevents', '--drop-rate', opt['drop-rate'], '--reenter-after', opt['reenter-after'], '--boot-spread', '20s'],
});
children.sim = sim;

const yaml = [
  'site: soak',
  'token: s3cret',
  'choria_insecure: true',
  `workers: ${opt.workers}`,
  'interval: 1m',
  `helper: ${JSON.stringify(`${process.execPath} ${ROOT}examples/helpers/pool-helper.mjs`)}`,
  'helper_mode: pool',
  'helper_pool_size: 2',
  'loglevel: info',
  `logfile: ${logFile}`,
  '',
].join('\n');
const choriaText = ['identity = soak-provisioner.example.net', `plugin.choria.middleware_hosts = ${nats.url}`, 'plugin.security.provider = file'].join('\n');
const { config, choria } = parseSite({ yaml, yamlSource: 'soak.yaml', choria: choriaText, choriaSource: 'soak-choria.cfg' });
const registry = new Registry();
const p = new Provisioner({ config, choria: { ...choria, tls: false }, registry, logger: createLogger({ logfile: logFile, loglevel: 'info', site: 'soak' }) });
await p.start();

const eld = monitorEventLoopDelay({ resolution: 10 });
eld.enable();
const metric = async (name, labels = {}) => {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return (m?.values ?? []).filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want)).reduce((a, v) => a + v.value, 0);
};
const gc = globalThis.gc;
const mb = (b) => (b / 1048576).toFixed(1);

process.stdout.write(
  `soak: ${minutes} min, ${nodes} nodes re-entering provisioning after ${opt['reenter-after']} (+-50 %), ${Number(opt['drop-rate']) * 100} % request loss, ` +
    `broker restart every ${restartEvery} min, ${opt.workers} workers, pool helper x2; log ${logFile}${gc === undefined ? '' : '; RSS after a full GC'}\n`,
);
process.stdout.write('min   rss MB  heap MB  eld p99 ms  nodes/min  failed  lost replies (acted/not/gone/unsure)  cycles  max configures/cycle  violations\n');

const samples = [];
let lastProvisioned = 0;
let lastFailed = 0;
let brokerRestarts = 0;
const started = Date.now();
for (let minute = 1; minute <= minutes; minute++) {
  // the broker restart falls in the middle of a minute, so each minute's figures include at most one
  const restartAt = restartEvery > 0 && minute % restartEvery === 0 ? started + (minute - 0.5) * 60_000 : undefined;
  if (restartAt !== undefined) {
    await new Promise((r) => setTimeout(r, Math.max(0, restartAt - Date.now())));
    await nats.restart();
    brokerRestarts++;
  }
  await new Promise((r) => setTimeout(r, Math.max(0, started + minute * 60_000 - Date.now())));
  gc?.();
  const mem = process.memoryUsage();
  const provisioned = await metric('choria_provisioner_outcomes', { outcome: 'provisioned' });
  const failed = await metric('choria_provisioner_outcomes', { outcome: 'failed' });
  const lost = {
    acted: await metric('choria_provisioner_lost_replies', { finding: 'acted' }),
    not: await metric('choria_provisioner_lost_replies', { finding: 'not_acted' }),
    gone: await metric('choria_provisioner_lost_replies', { finding: 'gone' }),
    unsure: await metric('choria_provisioner_lost_replies', { finding: 'unsure' }),
  };
  let summary;
  try {
    summary = await sim.summary();
  } catch {
    summary = undefined; // the control request may fall into a broker restart
  }
  const t = summary?.totals;
  const sample = {
    minute,
    rssMb: mem.rss / 1048576,
    heapMb: mem.heapUsed / 1048576,
    eldP99Ms: eld.percentile(99) / 1e6,
    nodesPerMin: provisioned - lastProvisioned,
    failed: failed - lastFailed,
    lost,
    cycles: t?.cycles,
    maxConfiguredPerCycle: t?.maxConfiguredPerCycle,
    violations: t?.violations,
    violationsByKind: t?.violationsByKind,
  };
  samples.push(sample);
  lastProvisioned = provisioned;
  lastFailed = failed;
  eld.reset();
  process.stdout.write(
    `${String(minute).padStart(3)}  ${mb(mem.rss).padStart(7)}  ${mb(mem.heapUsed).padStart(7)}  ${sample.eldP99Ms.toFixed(1).padStart(10)}  ` +
      `${String(sample.nodesPerMin).padStart(9)}  ${String(sample.failed).padStart(6)}  ${`${lost.acted}/${lost.not}/${lost.gone}/${lost.unsure}`.padStart(36)}  ` +
      `${String(t?.cycles ?? '?').padStart(6)}  ${String(t?.maxConfiguredPerCycle ?? '?').padStart(20)}  ${String(t?.violations ?? '?').padStart(10)}` +
      `${restartAt !== undefined ? '  (broker restarted)' : ''}\n`,
  );
}

const final = await sim.summary().catch(() => undefined);
// the nodes behind a failed check, for the log
const twice = [];
if ((final?.totals.maxConfiguredPerCycle ?? 0) > 1) {
  for (let offset = 0; offset < nodes; offset += 200) {
    for (const n of await sim.nodes(offset, 200).catch(() => [])) if (n.maxConfiguredPerCycle > 1) twice.push(n);
  }
}
await p.stop();
await stopAll();

const problems = [];
const base = samples.find((s) => s.minute === warmup);
if (base !== undefined) {
  const later = samples.filter((s) => s.minute > warmup);
  const peak = later.reduce((m, s) => Math.max(m, s.rssMb), 0);
  const growth = peak / base.rssMb - 1;
  process.stdout.write(`RSS after minute ${warmup}: ${base.rssMb.toFixed(1)} MB; highest later: ${peak.toFixed(1)} MB (${(growth * 100).toFixed(1)} %)\n`);
  if (growth > 0.1) problems.push(`RSS grew by ${(growth * 100).toFixed(1)} % after minute ${warmup} (limit 10 %)`);
} else {
  process.stdout.write(`(shorter than ${warmup} minutes: no RSS growth check)\n`);
}
const totals = final?.totals;
if (totals === undefined) problems.push('could not read the final fleet report');
else {
  if (totals.maxConfiguredPerCycle > 1) {
    const who = twice.map((n) => `${n.identity} (cycle ${n.cycle}, ${n.configuredCount} configures, ${n.restartCount} restarts)`).join(', ');
    problems.push(`a node was configured ${totals.maxConfiguredPerCycle} times in one provisioning cycle: ${who}`);
  }
  // A restart refused because the node is not configured yet is the provisioner's deliberate
  // check after a configure reply lost with the broker (docs/protocol.md, "Lost replies"):
  // reported, not a failure. Every other kind is.
  const { 'restart-refused': refusedRestarts = 0, ...others } = totals.violationsByKind;
  const otherCount = Object.values(others).reduce((a, b) => a + b, 0);
  if (otherCount > 0) problems.push(`the fleet recorded ${otherCount} protocol violations: ${JSON.stringify(others)}`);
  process.stdout.write(`restarts used as the check after a configure reply lost with the broker, refused by nodes not yet configured: ${refusedRestarts}\n`);
  process.stdout.write(
    `fleet: ${totals.cycles} re-provisioning cycles, ${totals.rpcCounts['choria_provision#configure'] ?? 0} configures, ${totals.dropped} requests lost, ${brokerRestarts} broker restarts\n`,
  );
}
const rates = samples.slice(1).map((s) => s.nodesPerMin).sort((a, b) => a - b);
const eldP99 = samples.map((s) => s.eldP99Ms).sort((a, b) => a - b);
const med = (v) => (v.length === 0 ? NaN : v[Math.floor(v.length / 2)]);
process.stdout.write(`median nodes/min ${med(rates)}, median event-loop delay p99 ${med(eldP99).toFixed(1)} ms, total failed ${lastFailed}\n`);
process.stdout.write(`SOAK-RESULT ${JSON.stringify({ minutes, nodes, brokerRestarts, samples, problems })}\n`);
if (problems.length > 0) {
  for (const pr of problems) process.stdout.write(`FAIL: ${pr}\n`);
  process.stdout.write(`log kept in ${logFile}\n`);
  process.exit(1);
}
rmSync(dir, { recursive: true, force: true });
process.stdout.write('PASS\n');
process.exit(0);

// npm run bench:flood: floods from the provisioning account at full size, against the built CLI
// (a process of its own: its RSS and log file are measured) on a private nats-server with JetStream
// (the history in a bucket), 8 workers, `interval: 1m`, the trivial process helper.
//
//   silent     60,000 startup events for valid names that never answer, published as fast as the
//              broker takes them; then one real (simulated) server boots and announces itself
//   answering  2,000 forged servers that announce themselves and answer every discovery, filtered
//              or not, and then nothing else; then one real server
//   log        20,000 replies to request ids never sent, 20,000 replies from other identities to a
//              node's request, 20,000 startup events with invalid identities, and four forged
//              servers answering every request with status 5 and a 600,000-character message
//
// Each reports the time from the real server's start to its provisioning, the provisioner's RSS
// before and at its peak (VmHWM), the history records (choria_provisioner_history_records) and
// what the log grew by (bytes, lines, longest line).
//
// usage: npm run build --silent && node bench/flood.mjs [--only silent,answering,log] [--cli PATH]
//   --cli PATH   another checkout's packages/cli/dist/bin.js (the code before a change)
//   --silent N, --answering N, --log N   the flood sizes (defaults above)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { URL, fileURLToPath } from 'node:url';
import { connect } from 'nats';
import { request } from 'node:http';
import {
  DISCOVERY_REPLY_BODY,
  codecFor,
  encodeLifecycleEvent,
  encodeRpcReply,
  newLifecycleEvent,
  nowNanoseconds,
} from '@choria-provisioner/core/internal';
import { freePort, startNatsServer } from './lib/nats-server.mjs';
import { startSimulator } from './lib/simulator.mjs';
import { memoryFromProc } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const CLI = arg('--cli', join(ROOT, 'packages', 'cli', 'dist', 'bin.js'));
const ONLY = arg('--only', 'silent,answering,log').split(',');
const SIZES = {
  silent: Number(arg('--silent', 60_000)),
  answering: Number(arg('--answering', 2_000)),
  log: Number(arg('--log', 20_000)),
};
const STARTUP = 'choria.lifecycle.event.startup.provision_mode_server';
const codec = codecFor('v1');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const startup = (identity) =>
  encodeLifecycleEvent(newLifecycleEvent({ type: 'startup', identity, component: 'provision_mode_server' }));

function reply(nc, req, sender, body) {
  const to = req.headers.replyTo;
  if (to === undefined) return;
  nc.publish(
    to,
    codec.encodeReply({ requestId: req.id, sender, agent: req.agent, timeNs: nowNanoseconds(), body }).transportJson,
  );
}

/** The provisioner CLI with its log in a file and its monitor port on `port`. */
async function startProvisioner(url, dir) {
  const port = await freePort();
  const choria = join(dir, 'choria.cfg');
  writeFileSync(choria, `identity = flood-bench.example.net\nplugin.choria.middleware_hosts = ${url}\n`);
  const log = join(dir, 'provisioner.log');
  writeFileSync(log, '');
  const config = join(dir, 'provisioner.yaml');
  writeFileSync(
    config,
    [
      'workers: 8',
      'interval: 1m',
      'token: s3cret',
      'site: flood',
      'choria_insecure: true',
      `choria_config: ${choria}`,
      'history_store: kv',
      'helper_mode: process',
      `helper: ${join(ROOT, 'bench', 'helpers', 'trivial-helper.sh')}`,
      `logfile: ${log}`,
      `monitor_port: ${port}`,
      '',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [CLI, 'run', '--config', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const metrics = () =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
      req.end();
    });
  for (let i = 0; ; i++) {
    try {
      if ((await metrics()).includes('choria_provisioner_paused')) break;
    } catch {
      // not listening yet
    }
    if (i > 300) throw new Error(`the provisioner did not start: ${stderr}`);
    await sleep(100);
  }
  await sleep(3_000); // connected, its start-up discovery over
  const metric = async (name, labels = '') => {
    const line = (await metrics()).split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };
  return { child, log, metric, stop: () => child.kill('SIGKILL') };
}

function logGrowth(file, from) {
  const text = readFileSync(file, 'utf8').slice(from);
  const lines = text.split('\n').filter((l) => l !== '');
  return {
    logBytes: Buffer.byteLength(text),
    logLines: lines.length,
    longestLine: lines.reduce((m, l) => Math.max(m, Buffer.byteLength(l)), 0),
  };
}

/** One real server boots (its startup event sent as it connects): ms until the simulator saw it provisioned. */
async function realServer(url, name) {
  const t0 = performance.now();
  const sim = await startSimulator({
    url,
    count: 1,
    flow: 'plain',
    name,
    timeScale: 0.01,
    extraArgs: ['--event-format', 'choria', '--identity-pattern', 'real-{i}.example.net'],
  });
  const done = await sim.waitFor((s) => (s.totals.rpcCounts?.['choria_provision#restart'] ?? 0) >= 1, 300_000, 50);
  const ms = performance.now() - t0;
  await sim.stop();
  return {
    provisionedMs: Math.round(ms),
    provisioned: (done.totals.rpcCounts?.['choria_provision#restart'] ?? 0) >= 1,
  };
}

async function silent(nc) {
  for (let i = 0; i < SIZES.silent; i++)
    nc.publish(STARTUP, startup(`flood-${String(i).padStart(6, '0')}.example.net`));
  await nc.flush();
}

async function answering(nc) {
  const forged = new Set(Array.from({ length: SIZES.answering }, (_, i) => `forged-${i}.example.net`));
  // every discovery is answered for each forged name it asks for (all of them when unfiltered)
  nc.subscribe('provisioning.broadcast.agent.discovery', {
    callback: (_err, msg) => {
      const req = codec.decodeRequest(msg.data);
      const asked = req.filter.identity.length === 0 ? [...forged] : req.filter.identity.filter((i) => forged.has(i));
      for (const id of asked) reply(nc, req, id, DISCOVERY_REPLY_BODY);
    },
  });
  await nc.flush();
  for (const id of forged) nc.publish(STARTUP, startup(id));
  await nc.flush();
}

async function logFlood(nc, url) {
  const n = SIZES.log;
  for (let i = 0; i < n; i++) nc.publish(STARTUP, startup(`bad name ${i}`));
  // four forged servers answer every request with status 5 and a 600,000-character message
  const huge = ['huge-1', 'huge-2', 'huge-3', 'huge-4'].map((h) => `${h}.example.net`);
  const body = encodeRpcReply({ action: 'inventory', statuscode: 5, statusmsg: 'x'.repeat(600_000), data: {} });
  // and a node that answers well gets n replies from other valid identities to its first request
  const crowded = 'crowded-1.example.net';
  const ok = encodeRpcReply({ action: 'inventory', statuscode: 0, statusmsg: 'OK', data: {} });
  let crowdedOnce = false;
  for (const id of [...huge, crowded]) {
    const handle = (msg, directed) => {
      const req = codec.decodeRequest(msg.data);
      if (req.agent === 'discovery') return reply(nc, req, id, DISCOVERY_REPLY_BODY);
      if (!directed) return;
      if (id !== crowded) return reply(nc, req, id, body);
      if (!crowdedOnce) for (let i = 0; i < n; i++) reply(nc, req, `other-${i}.example.net`, ok);
      crowdedOnce = true;
      reply(nc, req, id, ok);
    };
    nc.subscribe('provisioning.broadcast.agent.discovery', { callback: (_e, m) => handle(m, false) });
    nc.subscribe(`provisioning.node.${id}`, { callback: (_e, m) => handle(m, true) });
    nc.publish(STARTUP, startup(id));
  }
  // n replies to request ids never sent, on the reply subjects of the provisioner's first discovery
  let flooded = false;
  nc.subscribe('provisioning.broadcast.agent.discovery', {
    callback: (_e, msg) => {
      if (flooded) return;
      flooded = true;
      const req = codec.decodeRequest(msg.data);
      const prefix = req.headers.replyTo.slice(0, req.headers.replyTo.length - req.id.length);
      for (let i = 0; i < n; i++) {
        const requestId = `ffff${String(i).padStart(28, '0')}`;
        const r = codec.encodeReply({
          requestId,
          sender: huge[0],
          agent: 'discovery',
          timeNs: nowNanoseconds(),
          body: 'pong',
        });
        nc.publish(`${prefix}${requestId}`, r.transportJson);
      }
    },
  });
  await nc.flush();
  void url;
}

/** Records in the history bucket (read from the broker: the code before a change has no metric of its own). */
async function historyRecords(nc) {
  try {
    const kv = await nc.jetstream().views.kv('CHORIA_PROVISIONER_HISTORY', { bindOnly: true });
    return (await kv.status()).values;
  } catch {
    return 0;
  }
}

async function scenario(name) {
  const nats = await startNatsServer();
  const dir = mkdtempSync(join(tmpdir(), 'cpts-bench-flood-'));
  const p = await startProvisioner(nats.url, dir);
  const nc = await connect({ servers: nats.url, name: 'flood' });
  try {
    const rssBeforeMb = memoryFromProc(p.child.pid).rssMb;
    const logFrom = statSync(p.log).size;
    const t0 = performance.now();
    if (name === 'silent') await silent(nc);
    else if (name === 'answering') await answering(nc);
    else await logFlood(nc, nats.url);
    const floodMs = Math.round(performance.now() - t0);
    const real = name === 'log' ? {} : await realServer(nats.url, `real-${name}`);
    // the flood is worked off (or 60 s pass): candidates asked, forged servers tried
    for (let i = 0; i < 600 && (await p.metric('choria_provisioner_candidates')) > 0; i++) await sleep(100);
    await sleep(name === 'log' ? 30_000 : 12_000);
    // the history writes of the last attempts land
    await sleep(2_000);
    const result = {
      scenario: name,
      size: SIZES[name === 'log' ? 'log' : name],
      floodMs,
      ...real,
      rssBeforeMb: Math.round(rssBeforeMb),
      rssPeakMb: Math.round(memoryFromProc(p.child.pid).peakRssMb),
      historyRecords: await historyRecords(nc),
      ...logGrowth(p.log, logFrom),
    };
    console.log(JSON.stringify(result));
    return result;
  } finally {
    await nc.close().catch(() => undefined);
    p.stop();
    await nats.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const name of ONLY) await scenario(name);

// The simulated fleet in its own process (the built choria-simulator bin), so the benchmark's CPU
// and memory figures are the provisioner's. Controlled over NATS: choria.simulator.<name>.report.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { clearTimeout } from 'node:timers';
import { URL, fileURLToPath } from 'node:url';
import { connect, StringCodec } from 'nats';

const BIN = fileURLToPath(new URL('../../packages/simulator/dist/bin.js', import.meta.url));
const sc = StringCodec();

/**
 * Starts `count` nodes. `flow` 'plain' = protocol v1, no provisioning JWT; 'jwt' = protocol v1 with an
 * ed25519 provisioning JWT signed by the issuer; 'ed25519' = protocol v2
 * with an ed25519 provisioning JWT signed by the issuer and server JWT chain verification.
 */
export async function startSimulator({
  url,
  count,
  flow,
  keys,
  name = 'bench',
  nodesPerConnection = 1000,
  timeScale = 0.001,
  extraArgs = [],
}) {
  // BENCH_SIMULATOR_NODE_OPTIONS: e.g. --cpu-prof --cpu-prof-dir=DIR to profile the fleet
  const nodeArgs = (process.env.BENCH_SIMULATOR_NODE_OPTIONS ?? '').split(' ').filter((a) => a !== '');
  const args = [
    ...nodeArgs,
    BIN,
    '--server',
    url,
    '--count',
    String(count),
    '--name',
    name,
    '--token',
    's3cret',
    '--event-format',
    'none', // discovery, not startup events, finds the nodes
    '--nodes-per-connection',
    String(nodesPerConnection),
    '--time-scale',
    String(timeScale),
    '--seed',
    '42',
  ];
  if (flow === 'ed25519') {
    args.push(
      '--protocol',
      'v2',
      '--jwt-signer',
      'ed25519',
      '--jwt-key',
      keys.orgSeedFile,
      '--issuer-public',
      keys.orgPublic,
    );
  } else if (flow === 'jwt') {
    args.push('--protocol', 'v1', '--jwt-signer', 'ed25519', '--jwt-key', keys.orgSeedFile);
  } else {
    args.push('--protocol', 'v1', '--jwt-signer', 'none');
  }
  args.push(...extraArgs);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  // a scenario that crashes takes its fleet with it: one left running would answer the next
  // scenario's reports under the same name
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stderr = '';
  child.stderr.on('data', (d) => {
    if (stderr.length < 20_000) stderr += d.toString();
  });
  const lines = createInterface({ input: child.stdout });
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`simulator did not get ready within 60 s: ${stderr}`)), 60_000);
    lines.on('line', (line) => {
      let doc;
      try {
        doc = JSON.parse(line);
      } catch {
        return;
      }
      if (doc.ready === true) {
        clearTimeout(timer);
        resolve(doc);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`simulator exited with ${code} before it was ready: ${stderr}`));
    });
  });
  const nc = await connect({ servers: url, name: 'bench-simulator-control' });

  return {
    pid: child.pid,
    ready,
    /** totals and fleet-wide violations */
    async summary() {
      const msg = await nc.request(ready.control.report, sc.encode('{"summary":true}'), { timeout: 30_000 });
      return JSON.parse(sc.decode(msg.data));
    },
    /** the per-node report of `limit` nodes from `offset` */
    async nodes(offset, limit) {
      const msg = await nc.request(ready.control.report, sc.encode(JSON.stringify({ offset, limit })), {
        timeout: 30_000,
      });
      return JSON.parse(sc.decode(msg.data)).nodes ?? [];
    },
    /** polls the summary every `pollMs` until `pred(summary)` holds; returns the last summary */
    async waitFor(pred, timeoutMs, pollMs = 200) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const s = await this.summary();
        if (pred(s) || Date.now() > until) return s;
        await new Promise((r) => setTimeout(r, pollMs));
      }
    },
    async stop() {
      process.off('exit', killOnExit);
      await nc.close().catch(() => undefined);
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(t);
    },
  };
}

// A private nats-server for the benchmark: a free loopback port (never 4222), JetStream in a temp
// store dir (the history/* scenarios; the others keep the node history in memory), stopped by its PID.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clearTimeout } from 'node:timers';

export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const srv = createServer();
      srv.unref();
      srv.on('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => resolve(addr.port));
      });
    });
    if (port !== 4222) return port;
  }
}

async function listening(port, deadlineMs) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = tcpConnect({ host: '127.0.0.1', port }, () => {
        s.end();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on 127.0.0.1:${port} within ${deadlineMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Debian installs nats-server in /usr/sbin, which is not on every user's PATH. */
export function natsEnv() {
  return { ...process.env, PATH: `${process.env.PATH ?? ''}:/usr/sbin:/usr/local/sbin` };
}

/** Starts nats-server ($NATS_SERVER_BIN or PATH) on 127.0.0.1:<free port>. */
export async function startNatsServer() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'cpts-bench-nats-'));
  const conf = join(dir, 'server.conf');
  // max_pending: a 10,000-node discovery reply burst must not mark the provisioner a slow consumer
  writeFileSync(
    conf,
    `listen: "127.0.0.1:${port}"\nmax_payload: 1048576\nmax_pending: 268435456\njetstream { store_dir: ${JSON.stringify(join(dir, 'js'))} }\n`,
  );
  const bin = process.env.NATS_SERVER_BIN ?? 'nats-server';
  let child;
  let stderr = '';
  const launch = async () => {
    child = spawn(bin, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'], env: natsEnv() });
    stderr = '';
    child.stderr.on('data', (d) => {
      if (stderr.length < 10_000) stderr += d.toString();
    });
    const started = child;
    const exited = new Promise((_, reject) => {
      started.once('exit', (code) => reject(new Error(`nats-server exited with ${code}: ${stderr}`)));
      started.once('error', (err) => reject(new Error(`could not start ${bin}: ${err.message}`)));
    });
    exited.catch(() => undefined);
    await Promise.race([listening(port, 10_000), exited]);
  };
  await launch();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    get pid() {
      return child.pid;
    },
    /** kill -9 and start again on the same port: every connection drops and reconnects */
    async restart() {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await gone;
      await launch();
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await gone;
        clearTimeout(t);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

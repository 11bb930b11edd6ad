// A private nats-server for the demo: found like scripts/ensure-nats-server looks for it, started
// on a free loopback port with JetStream in a temp store dir, stopped by PID.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/** The port of the machine's own broker: never used by the demo even if it happens to be free. */
const RESERVED_PORT = 4222;

export const NATS_INSTALL_HINT = [
  'nats-server (2.9 or later) is needed for the demo but was not found.',
  'Install it with one of:',
  "  bash scripts/ensure-nats-server        (from the repository root; installs Debian's package when run as root)",
  '  sudo apt-get install -y nats-server    (Debian/Ubuntu)',
  '  https://docs.nats.io/running-a-nats-service/introduction/installation',
  'or point NATS_SERVER_BIN at the binary.',
].join('\n');

export type NatsServerLookup = { found: true; bin: string } | { found: false; reason: string };

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `$NATS_SERVER_BIN`, else `nats-server` on PATH, else /usr/sbin (Debian's place, often not on a user's PATH). */
export function findNatsServer(
  env: NodeJS.ProcessEnv,
  executable: (path: string) => boolean = isExecutable,
): NatsServerLookup {
  const explicit = env['NATS_SERVER_BIN'];
  if (explicit !== undefined && explicit !== '') {
    return executable(explicit)
      ? { found: true, bin: explicit }
      : { found: false, reason: `NATS_SERVER_BIN=${explicit} is not an executable file` };
  }
  const dirs = (env['PATH'] ?? '').split(delimiter).filter((d) => d !== '');
  for (const dir of [...dirs, '/usr/sbin', '/usr/local/sbin']) {
    const candidate = join(dir, 'nats-server');
    if (executable(candidate)) return { found: true, bin: candidate };
  }
  return { found: false, reason: 'nats-server is not on PATH, in /usr/sbin or in /usr/local/sbin' };
}

async function freeLoopbackPort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.on('error', reject);
      srv.listen(0, '127.0.0.1', () => {
        const addr = srv.address();
        const p = addr !== null && typeof addr === 'object' ? addr.port : 0;
        srv.close(() => resolve(p));
      });
    });
    if (port === 0) throw new Error('could not find a free loopback port for nats-server');
    if (port !== RESERVED_PORT) return port;
  }
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tcpConnect({ host: '127.0.0.1', port }, () => {
      s.end();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export interface DemoNatsServer {
  readonly url: string;
  readonly pid: number;
  /** SIGTERM, SIGKILL after 5 s; removes the store dir. Safe to call twice. */
  stop(): Promise<void>;
  /** Synchronous last resort for process exit handlers: SIGKILL by PID. */
  killNow(): void;
}

export async function startDemoNats(bin: string, opts: { startTimeoutMs?: number } = {}): Promise<DemoNatsServer> {
  const port = await freeLoopbackPort();
  const storeDir = mkdtempSync(join(tmpdir(), 'choria-demo-nats-'));
  const confFile = join(storeDir, 'nats-server.conf');
  writeFileSync(
    confFile,
    [`listen: "127.0.0.1:${port}"`, `jetstream { store_dir: ${JSON.stringify(join(storeDir, 'js'))} }`, ''].join('\n'),
  );

  // Own process group: a Ctrl-C in the terminal reaches the demo, which then stops the provisioner
  // and the fleet while their broker is still up, and the broker last.
  const child: ChildProcess = spawn(bin, ['-c', confFile], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    if (stderr.length < 4000) stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (err) => reject(new Error(`could not start ${bin}: ${err.message}`)));
    child.once('exit', (code, signal) =>
      reject(new Error(`${bin} exited with ${signal ?? `status ${String(code)}`} while starting: ${stderr.trim()}`)),
    );
  });
  failed.catch(() => undefined);

  const isRunning = (): boolean => child.exitCode === null && child.signalCode === null && child.pid !== undefined;
  const killNow = (): void => {
    if (isRunning()) child.kill('SIGKILL');
  };
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (isRunning()) {
        const timer = setTimeout(killNow, 5_000);
        child.kill('SIGTERM');
        await exited;
        clearTimeout(timer);
      }
      rmSync(storeDir, { recursive: true, force: true });
    })());

  try {
    const timeoutMs = opts.startTimeoutMs ?? 10_000;
    const until = Date.now() + timeoutMs;
    const listening = (async () => {
      while (!(await canConnect(port))) {
        if (Date.now() > until)
          throw new Error(`${bin} did not listen on 127.0.0.1:${port} within ${timeoutMs} ms: ${stderr.trim()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await Promise.race([listening, failed]);
  } catch (err) {
    await stop();
    throw err;
  }
  child.stderr?.removeAllListeners('data');
  child.stderr?.resume();
  return { url: `nats://127.0.0.1:${port}`, pid: child.pid ?? -1, stop, killNow };
}

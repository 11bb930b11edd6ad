// The helper-spawning companion process (see spawner.ts for why it exists). Started by the
// provisioner as `node spawner-child.js` with an IPC channel; runs each helper in its own process
// group with three pipes and bounded output, and reports back. Imports nothing of the library:
// it must start fast and stay small.
import { spawn, type ChildProcess } from 'node:child_process';
import { clearTimeout, setTimeout } from 'node:timers';
import type { DoneMessage, FromSpawner, RunMessage, ToSpawner } from './spawner-protocol.js';

interface Captured {
  readonly kept: Buffer[];
  keptBytes: number;
  seen: number;
}

interface Run {
  kill(): void;
  /** SIGKILL to the process group and nothing else (the channel is gone) */
  killGroup(): void;
}

const runs = new Map<number, Run>();
// A plain copy: spawn() walks the environment object for every child, and process.env is slow to walk.
const ENV: NodeJS.ProcessEnv = { ...process.env };

function send(m: FromSpawner): void {
  if (process.connected && process.send !== undefined) process.send(m);
}

function keep(b: Captured, chunk: Buffer, limit: number): void {
  b.seen += chunk.length;
  const room = limit - b.keptBytes;
  if (room <= 0) return;
  const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
  b.kept.push(part);
  b.keptBytes += part.length;
}

function start(m: RunMessage): void {
  const started = Date.now();
  const out: Captured = { kept: [], keptBytes: 0, seen: 0 };
  const err: Captured = { kept: [], keptBytes: 0, seen: 0 };
  let killed = false;
  let done = false;
  let tooLarge = false;
  let exitCode: number | null = null;
  let grace: NodeJS.Timeout | undefined;
  let exitNote: NodeJS.Timeout | undefined;

  const finish = (fields: Partial<Pick<DoneMessage, 'spawnError' | 'code' | 'signal' | 'forced'>>): void => {
    if (done) return;
    done = true;
    clearTimeout(grace);
    clearTimeout(exitNote);
    runs.delete(m.id);
    send({
      t: 'done',
      id: m.id,
      code: null,
      signal: null,
      forced: false,
      exitCode,
      tooLarge,
      stdout: Buffer.concat(out.kept),
      stdoutBytes: out.seen,
      stderr: Buffer.concat(err.kept),
      stderrBytes: err.seen,
      ...fields,
    });
  };

  let child: ChildProcess;
  try {
    child = spawn(m.file, [...m.args], { cwd: m.cwd, env: m.env ?? ENV, detached: true, stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
  } catch (e) {
    finish({ spawnError: e instanceof Error ? e.message : String(e) });
    return;
  }
  const killGroup = (): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  };
  const kill = (): void => {
    if (killed || done) return;
    killed = true;
    killGroup();
    grace = setTimeout(() => {
      child.stdout?.destroy();
      child.stderr?.destroy();
      finish({ forced: true });
    }, m.pipeGraceMs);
  };
  runs.set(m.id, { kill, killGroup });

  child.on('error', (e) => {
    if (child.pid === undefined) finish({ spawnError: e.message });
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    keep(out, chunk, m.maxStdout);
    if (out.seen > m.maxStdout && !tooLarge && !killed) {
      tooLarge = true;
      kill();
    }
  });
  child.stderr?.on('data', (chunk: Buffer) => keep(err, chunk, m.maxStderr));
  child.stdin?.on('error', () => undefined);
  child.stdin?.end(m.input);
  child.on('exit', (code) => {
    exitCode = code;
    const afterMs = Date.now() - started;
    exitNote = setTimeout(() => send({ t: 'exit', id: m.id, code, afterMs }), 20);
  });
  child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
    if (child.pid === undefined) return;
    finish({ code, signal });
  });
}

// The provisioner closed the channel or died: no helper outlives it (a clean stop has none running).
process.on('disconnect', () => {
  for (const r of runs.values()) r.killGroup();
  process.exit(0);
});
process.on('message', (m: ToSpawner) => {
  if (m.t === 'run') start(m);
  else if (m.t === 'kill') runs.get(m.id)?.kill();
});

// Runs helper processes and reports on them in the spawner protocol's messages
// (spawner-protocol.ts): each helper in its own process group with three pipes and bounded output,
// its time limit counted from its own spawn. Used by the Node companion process
// (spawner-child.ts, which reads the run and kill messages from its stdin and writes the reports
// to its stdout) and, with `helper_spawner: none`, in the provisioner's own process (spawner.ts).
// Imports nothing of the library: the companion must start fast and stay small.
import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setImmediate, setTimeout } from 'node:timers';
import type { DoneMessage, FromSpawner, RunMessage } from './spawner-protocol.js';

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

function keep(b: Captured, chunk: Buffer, limit: number): void {
  b.seen += chunk.length;
  const room = limit - b.keptBytes;
  if (room <= 0) return;
  const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
  b.kept.push(part);
  b.keptBytes += part.length;
}

/** What starts helper processes for a spawner: run and kill messages in, reports out through `send`. */
export interface ProcessLauncher {
  run(m: RunMessage): void;
  /** Kills a run's process group (a run not started yet never starts). */
  kill(id: number): void;
  /** SIGKILL to every run's process group, and nothing else: the channel is gone. */
  killAll(): void;
}

/**
 * A runner whose reports go to `send`, always from a later turn of the event loop than the call
 * that caused them. `env` is the helpers' environment when a run message carries none (a plain
 * copy: spawn() walks the environment object for every child, and process.env is slow to walk).
 */
export function processLauncher(send: (m: FromSpawner) => void, env: NodeJS.ProcessEnv): ProcessLauncher {
  const runs = new Map<number, Run>();

  /**
   * Runs waiting to be started, oldest first. spawn() blocks this process until the new process has
   * called exec(), and on a busy machine (a burst of 100 helpers starting on 2 cores) that takes
   * ~100 ms each: starting a whole burst in one go kept this loop from reading exits and pipes for
   * seconds. One start per loop turn lets the exits, output and reports of the others through.
   */
  const queued = new Map<number, RunMessage>();
  let draining = false;

  function startNext(): void {
    const next = queued.entries().next();
    if (!next.done) {
      const [id, m] = next.value;
      queued.delete(id);
      start(m);
    }
    if (queued.size > 0) setImmediate(startNext);
    else draining = false;
  }

  function enqueue(m: RunMessage): void {
    queued.set(m.id, m);
    if (draining) return;
    draining = true;
    setImmediate(startNext);
  }

  /** A kill for a run not started yet: it never starts; the report has nothing to say. */
  function dropQueued(id: number): boolean {
    if (!queued.delete(id)) return false;
    setImmediate(() =>
      send({
        t: 'done',
        id,
        code: null,
        signal: null,
        exitCode: null,
        exitAfterMs: null,
        forced: false,
        tooLarge: false,
        timedOut: false,
        stdout: '',
        stdoutBytes: 0,
        stderr: '',
        stderrBytes: 0,
      }),
    );
    return true;
  }

  function start(m: RunMessage): void {
    const out: Captured = { kept: [], keptBytes: 0, seen: 0 };
    const err: Captured = { kept: [], keptBytes: 0, seen: 0 };
    let killed = false;
    let done = false;
    let tooLarge = false;
    let timedOut = false;
    let exitCode: number | null = null;
    let exitAfterMs: number | null = null;
    let outEnded = false;
    let errEnded = false;
    let grace: NodeJS.Timeout | undefined;
    let limit: NodeJS.Timeout | undefined;

    const finish = (fields: Partial<Pick<DoneMessage, 'spawnError' | 'code' | 'signal' | 'forced'>>): void => {
      if (done) return;
      done = true;
      clearTimeout(grace);
      clearTimeout(limit);
      runs.delete(m.id);
      send({
        t: 'done',
        id: m.id,
        code: null,
        signal: null,
        forced: false,
        exitCode,
        exitAfterMs,
        tooLarge,
        timedOut,
        stdout: Buffer.concat(out.kept).toString('base64'),
        stdoutBytes: out.seen,
        stderr: Buffer.concat(err.kept).toString('base64'),
        stderrBytes: err.seen,
        ...fields,
      });
    };

    let child: ChildProcess;
    try {
      child = spawn(m.file, [...m.args], {
        cwd: m.cwd,
        env: m.env ?? env,
        detached: true,
        stdio: ['pipe', 'pipe', 'pipe'],
        windowsHide: true,
      });
    } catch (e) {
      finish({ spawnError: e instanceof Error ? e.message : String(e) });
      return;
    }
    // the limit counts from the moment the helper exists, not from the blocking spawn() call
    const started = performance.now();
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
      clearTimeout(limit);
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
    if (child.pid !== undefined) {
      send({ t: 'started', id: m.id, pid: child.pid });
      // The timer only says "look now". The look waits for the next poll phase (setImmediate), where
      // an exit and pipe ends that happened while this loop was busy are read first: a helper that
      // finished in time but was noticed late is not killed and reported as timed out. (One that
      // ended during such a stall just after its limit passes too: the lenient side.) Exited with
      // both pipes at their end means over: 'close' follows once the pipe handles are closed, in a
      // later phase of the loop. (The library's afterPendingIo in util/io-timer.ts is the same
      // rule; this module imports nothing of the library.)
      limit = setTimeout(() => {
        setImmediate(() => {
          if (done || killed || (exitAfterMs !== null && outEnded && errEnded)) return;
          timedOut = true;
          kill();
        });
      }, m.timeoutMs);
    }

    child.stdout?.on('data', (chunk: Buffer) => {
      keep(out, chunk, m.maxStdout);
      if (out.seen > m.maxStdout && !tooLarge && !killed) {
        tooLarge = true;
        kill();
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => keep(err, chunk, m.maxStderr));
    child.stdout?.once('end', () => (outEnded = true));
    child.stderr?.once('end', () => (errEnded = true));
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(m.input);
    child.on('exit', (code) => {
      exitCode = code;
      // the helper's own exit; one caused by our kill says nothing about the helper's run time
      if (!killed) exitAfterMs = Math.round(performance.now() - started);
    });
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      if (child.pid === undefined) return;
      finish({ code, signal });
    });
  }

  return {
    run: enqueue,
    kill: (id) => {
      if (!dropQueued(id)) runs.get(id)?.kill();
    },
    killAll: () => {
      queued.clear();
      for (const r of runs.values()) r.killGroup();
    },
  };
}

// Starts one-shot helper processes from a small companion process instead of the provisioner.
//
// Why: Node starts a child with fork() + exec() (libuv 1.52, Node 24's, still does on Linux), and
// fork() copies the page tables of the whole parent. A provisioner with 150 MB of heap forks much
// more slowly than a bare Node process, and the fork runs on the provisioner's event-loop thread,
// stalling every RPC meanwhile. The companion ("spawner") does only this: the provisioner sends it
// the program, arguments and stdin text, it runs the helper exactly as ProcessHelper did (own
// process group, three pipes, bounded output, the kill grace period) and sends back the exit
// status and the output (spawner-protocol.ts: JSON lines, three per run).
//
// Two companions speak that protocol. spawner-child.ts, a bare Node process, is the default on
// every host and starts helpers with Node's spawn() (spawner-runner.ts). spawner-child.py, an
// opt-in (`helper_spawner: python3`, or `auto`: python3 where it works), starts them with
// posix_spawn(), a vfork-style start that copies no page tables, so each start costs its parent
// less CPU (BENCHMARKS.md, "The helper spawner", has the measured gain). Which one runs is
// SpawnerChoice's decision, made once per runner. With `helper_spawner: none` there is no
// companion: spawner-runner.ts runs in this process, and every start forks the provisioner.
//
// The companion also keeps the helper's time limit, from its own spawn of the helper: this
// process may read a report late (its event loop busy with two sites' start-up), and a run that
// ended within its limit must not be called timed out for that.
//
// The helper's environment is the provisioner's as it was when the spawner started (the first
// helper run), unless ProcessHelper was given one; its working directory is the provisioner's at
// the time of each run.
import type { ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import type { RunMessage, ToSpawner } from './spawner-protocol.js';
import {
  SpawnerChoice,
  startCompanion,
  type SpawnerKind,
  type SpawnerOutcome,
  type SpawnerSetting,
} from './spawner-choice.js';
import { processLauncher, type ProcessLauncher } from './spawner-runner.js';
import { killProcessGroup } from './spawn.js';
import { errorText, isPlainObject as isRecord } from '../../util/values.js';
import { settledWithin } from '../../util/deadline.js';

export {
  SPAWNER_SETTINGS,
  SpawnerChoice,
  type SpawnerKind,
  type SpawnerOutcome,
  type SpawnerSetting,
} from './spawner-choice.js';

/**
 * The most spawner processes a ProcessHelper starts, whatever the core
 * count: each is a whole interpreter's memory.
 */
export const MAX_SPAWNERS = 4;

/** How long close() waits for the spawner to exit, after closing its channel and again after SIGKILL. */
const SPAWNER_EXIT_MS = 2000;

/** What the provisioner asks for: the run message, with the program and its arguments as one argv. */
export interface SpawnRequest extends Omit<RunMessage, 't' | 'id' | 'file' | 'args'> {
  readonly argv: readonly [string, ...string[]];
}

/** How a run ended. */
export interface SpawnOutcome {
  /** the program could not be started (spawn's own message, e.g. `spawn /x ENOENT`) */
  readonly spawnError?: string;
  /** the spawner itself went away; nothing is known about the helper */
  readonly lost?: string;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** status from the 'exit' event (before the pipes closed), null if it never came */
  readonly exitCode: number | null;
  /** ms from the spawn to that exit, measured by the spawner; null if the helper did not exit before a kill */
  readonly exitAfterMs: number | null;
  /** the spawner killed the group: the run was still going (or its pipes open) at the time limit */
  readonly timedOut: boolean;
  /** the pipes were given up on after a kill (a process outside the group kept them open) */
  readonly forced: boolean;
  /** stdout went over maxStdout: the spawner killed the group */
  readonly tooLarge: boolean;
  readonly stdout: Buffer;
  readonly stdoutBytes: number;
  readonly stderr: Buffer;
  readonly stderrBytes: number;
}

export interface SpawnEvents {
  /** the spawner started the helper process (its time limit runs from here) */
  onStarted(): void;
  onDone(outcome: SpawnOutcome): void;
}

export interface SpawnedRun {
  /** Kills the helper's process group; onDone follows once the pipes closed or the grace ran out. */
  kill(): void;
}

function bytes(v: unknown): Buffer {
  return typeof v === 'string' ? Buffer.from(v, 'base64') : Buffer.alloc(0);
}

function num(v: unknown): number {
  return typeof v === 'number' ? v : 0;
}

function numOrNull(v: unknown): number | null {
  return typeof v === 'number' ? v : null;
}

/** The provisioner's side of one companion: starts it on first use and routes its messages to the runs. */
export class HelperSpawner {
  readonly #choice: SpawnerChoice;
  #child: ChildProcess | undefined;
  #childKind: SpawnerKind = 'node';
  /** helper_spawner none: the runner in this process that takes the companion's place */
  #inline: ProcessLauncher | undefined;
  /** the companion said it is ready: lines go straight to it */
  #ready = false;
  /** run messages not written yet (the companion is starting), by run id */
  readonly #pending = new Map<number, string>();
  readonly #runs = new Map<number, SpawnEvents>();
  /** the process group of each run the companion started and has not reported done */
  readonly #groups = new Map<number, number>();
  #nextId = 1;
  #closed = false;
  #readBuffer = '';

  constructor(choice: SpawnerChoice = new SpawnerChoice()) {
    this.#choice = choice;
  }

  /** Starts the companion now rather than at the first run. */
  warmUp(): void {
    if (!this.#closed) this.#ensure();
  }

  /** Runs handed to this spawner and not reported done yet. */
  get inFlight(): number {
    return this.#runs.size;
  }

  run(req: SpawnRequest, events: SpawnEvents): SpawnedRun {
    const id = this.#nextId++;
    const [file, ...args] = req.argv;
    this.#runs.set(id, events);
    try {
      if (this.#closed) throw new Error('the helper spawner is closed');
      const run: RunMessage = {
        t: 'run',
        id,
        file,
        args,
        cwd: req.cwd,
        env: req.env,
        input: req.input,
        maxStdout: req.maxStdout,
        maxStderr: req.maxStderr,
        pipeGraceMs: req.pipeGraceMs,
        timeoutMs: req.timeoutMs,
      };
      this.#send(id, run);
    } catch (err) {
      // settle on a later tick, like any other outcome
      queueMicrotask(() =>
        this.#settleEmpty(id, `could not hand the helper to the spawner process: ${errorText(err)}`),
      );
    }
    this.#updateRef();
    return {
      kill: () => {
        if (!this.#runs.has(id)) return;
        // not written yet: it never starts, and there is nothing to report
        if (this.#pending.delete(id)) return queueMicrotask(() => this.#settleEmpty(id));
        this.#write({ t: 'kill', id });
      },
    };
  }

  /** Stops the spawner; helpers still running are killed with it. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#inline?.killAll();
    this.#inline = undefined;
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    // an idle spawner is unref'd; waiting for its exit must keep the process alive, or a caller
    // awaiting close() with nothing else pending sees its process end mid-await (exit code 0)
    child.ref();
    // end of its stdin: it kills what it still runs and exits
    if (child.stdin !== null && !child.stdin.destroyed) child.stdin.end();
    else child.kill('SIGKILL');
    if (await settledWithin(exited, SPAWNER_EXIT_MS)) return;
    // one that has not exited is stuck, and close() must end all the same
    child.kill('SIGKILL');
    await settledWithin(exited, SPAWNER_EXIT_MS);
  }

  #send(id: number, m: RunMessage): void {
    this.#ensure();
    if (this.#ready) this.#write(m);
    else this.#pending.set(id, `${JSON.stringify(m)}\n`);
  }

  #write(m: ToSpawner): void {
    if (this.#inline !== undefined) {
      if (m.t === 'run') this.#inline.run(m);
      else this.#inline.kill(m.id);
      return;
    }
    const stdin = this.#child?.stdin;
    if (stdin === null || stdin === undefined || !this.#ready || stdin.destroyed) return; // its exit settles the runs
    stdin.write(`${JSON.stringify(m)}\n`);
  }

  #ensure(): void {
    if (this.#child !== undefined || this.#inline !== undefined) return;
    const kind = this.#choice.kind;
    if (kind === 'none') {
      // its reports come from later turns of the event loop, as a companion's would
      this.#inline = processLauncher((m) => this.#onMessage(m as unknown as Record<string, unknown>), {
        ...process.env,
      });
      this.#childKind = kind;
      this.#ready = true;
      this.#choice.cameUp(kind);
      return;
    }
    let child: ChildProcess;
    try {
      child = startCompanion(kind);
    } catch (err) {
      // its program is missing from this installation: under 'auto', the other kind
      if (this.#choice.couldNotStart(kind, errorText(err))) return this.#ensure();
      throw err;
    }
    this.#child = child;
    this.#childKind = kind;
    this.#ready = false;
    this.#readBuffer = '';
    child.stdin?.on('error', () => undefined); // a companion gone mid-write: its exit reports it
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      if (this.#child !== child) return;
      const lines = (this.#readBuffer + chunk).split('\n');
      this.#readBuffer = lines.pop() ?? '';
      for (const line of lines) this.#onLine(child, line);
    });
    child.once('error', (e) => this.#gone(child, errorText(e)));
    child.once('exit', (code, signal) =>
      this.#gone(child, signal !== null ? `it was killed by ${signal}` : `it exited with status ${String(code)}`),
    );
  }

  /** The companion is gone (or will not work): start the other kind for the runs not started, or give up on them. */
  #gone(child: ChildProcess, why: string): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    const wasReady = this.#ready;
    this.#ready = false;
    if (!wasReady && !this.#closed && this.#choice.couldNotStart(this.#childKind, why)) {
      child.kill('SIGKILL');
      this.#ensure();
      this.#updateRef();
      return;
    }
    const reason = wasReady
      ? 'the helper spawner process exited'
      : `the ${this.#childKind} helper spawner could not start: ${why}`;
    this.#pending.clear();
    // A companion that died (killed, crashed) could not kill its helpers: they would run on as
    // orphans, a hanging one for ever.
    for (const pid of this.#groups.values()) killProcessGroup({ pid });
    this.#groups.clear();
    for (const id of [...this.#runs.keys()]) this.#settleEmpty(id, reason);
  }

  #onLine(child: ChildProcess, line: string): void {
    let m: unknown;
    try {
      m = JSON.parse(line);
    } catch {
      return; // not a protocol line
    }
    if (!isRecord(m)) return;
    if (m['t'] === 'ready') {
      this.#ready = true;
      this.#choice.cameUp(this.#childKind);
      const lines = [...this.#pending.values()];
      this.#pending.clear();
      if (lines.length > 0) child.stdin?.write(lines.join(''));
      return;
    }
    if (m['t'] === 'unsupported') {
      this.#gone(child, typeof m['why'] === 'string' ? m['why'] : 'it says it cannot work here');
      child.kill('SIGKILL');
      return;
    }
    this.#onMessage(m);
  }

  /**
   * Settles a run with nothing to report of the helper: one killed before it was written to the
   * companion (no `lost`), or one whose companion went away or could not be reached (`lost`).
   */
  #settleEmpty(id: number, lost?: string): void {
    const events = this.#runs.get(id);
    if (events === undefined) return;
    this.#runs.delete(id);
    this.#updateRef();
    const none = Buffer.alloc(0);
    events.onDone({
      ...(lost === undefined ? {} : { lost }),
      code: null,
      signal: null,
      exitCode: null,
      exitAfterMs: null,
      timedOut: false,
      forced: false,
      tooLarge: false,
      stdout: none,
      stdoutBytes: 0,
      stderr: none,
      stderrBytes: 0,
    });
  }

  #onMessage(m: Record<string, unknown>): void {
    if (typeof m['id'] !== 'number') return;
    const events = this.#runs.get(m['id']);
    if (events === undefined) return;
    if (m['t'] === 'started') {
      const pid = m['pid'];
      if (typeof pid === 'number' && Number.isInteger(pid) && pid > 1) this.#groups.set(m['id'], pid);
      events.onStarted();
      return;
    }
    if (m['t'] !== 'done') return;
    this.#groups.delete(m['id']);
    this.#runs.delete(m['id']);
    this.#updateRef();
    const spawnError = m['spawnError'];
    const signal = m['signal'];
    events.onDone({
      ...(typeof spawnError === 'string' ? { spawnError } : {}),
      code: numOrNull(m['code']),
      signal: typeof signal === 'string' ? (signal as NodeJS.Signals) : null,
      exitCode: numOrNull(m['exitCode']),
      exitAfterMs: numOrNull(m['exitAfterMs']),
      timedOut: m['timedOut'] === true,
      forced: m['forced'] === true,
      tooLarge: m['tooLarge'] === true,
      stdout: bytes(m['stdout']),
      stdoutBytes: num(m['stdoutBytes']),
      stderr: bytes(m['stderr']),
      stderrBytes: num(m['stderrBytes']),
    });
  }

  /** The idle spawner must not keep the provisioner's process alive. */
  #updateRef(): void {
    const child = this.#child;
    if (child === undefined) return;
    const busy = this.#runs.size > 0;
    for (const handle of [child, child.stdin, child.stdout]) {
      const h = handle as unknown as { ref?: () => void; unref?: () => void } | null;
      if (busy) h?.ref?.();
      else h?.unref?.();
    }
  }
}

/**
 * Several spawners; each run goes to the one with the fewest runs in flight. Why more than one:
 * spawn() blocks a spawner until the new process has called exec() (libuv waits for that, so that
 * a kill right after the start cannot hit the forked copy of Node), and on a VM whose forks are slow
 * that wait is long: with many workers a single spawner spends most of its time in it and the
 * helpers' starts queue behind one another. With one spawner per core the starts overlap; more
 * spawners than cores gain nothing. A spawner starts on first use, so a site that runs one helper at a time
 * has only one.
 */
export class HelperSpawners {
  readonly #spawners: readonly HelperSpawner[];
  readonly #choice: SpawnerChoice;

  constructor(count = Math.min(availableParallelism(), MAX_SPAWNERS), setting: SpawnerSetting = 'node') {
    if (!Number.isInteger(count) || count < 1)
      throw new RangeError(`the number of helper spawners must be a positive integer, got ${count}`);
    this.#choice = new SpawnerChoice(setting);
    // without a companion, one runner in this process starts them all
    this.#spawners = Array.from({ length: setting === 'none' ? 1 : count }, () => new HelperSpawner(this.#choice));
  }

  /** The companion program this runner starts helpers with (python3 until it failed to come up, under 'auto'). */
  get companion(): SpawnerKind {
    return this.#choice.kind;
  }

  /** Why python3 is not used, when it was tried and failed under 'auto'. */
  get fallbackReason(): string | undefined {
    return this.#choice.fallbackReason;
  }

  /**
   * Starts one companion now (the choice between python3 and node is made by it); `outcome` hears how it turned out.
   */
  warmUp(outcome?: (o: SpawnerOutcome) => void): void {
    if (outcome !== undefined) this.#choice.onOutcome(outcome);
    this.#spawners[0]?.warmUp();
  }

  run(req: SpawnRequest, events: SpawnEvents): SpawnedRun {
    let least = this.#spawners[0] as HelperSpawner;
    for (const s of this.#spawners) if (s.inFlight < least.inFlight) least = s;
    return least.run(req, events);
  }

  /** Stops every spawner; helpers still running are killed with them. */
  async close(): Promise<void> {
    await Promise.all(this.#spawners.map((s) => s.close()));
  }
}

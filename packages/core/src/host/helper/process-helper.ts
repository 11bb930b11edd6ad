// Runs the helper the upstream way: one process per request, request JSON on stdin then EOF,
// reply JSON on stdout, exit status 0. Differences from upstream: the time
// limit is configurable, stderr is captured (bounded) for the caller to log, output is bounded,
// and a timeout or abort kills the helper's whole process group, not only the helper itself.
// The processes are started by a companion process (spawner.ts), which is much faster than
// forking the provisioner itself for every node. The companion also keeps the time limit, so
// that it measures the helper, not how long this process took to read the report.
import { performance } from 'node:perf_hooks';
import {
  HelperError,
  HelperReplyError,
  publicReasonForReplyError,
  reasonForReplyError,
  type HelperErrorKind,
  type HelperOutput,
} from './errors.js';
import { BoundedBuffer, requestSecrets } from './output.js';
import { parseHelperReply } from './reply.js';
import { encodeHelperRequest } from './request.js';
import { parseHelperCommand } from './spawn.js';
import {
  HelperSpawners,
  type SpawnedRun,
  type SpawnerKind,
  type SpawnerOutcome,
  type SpawnerSetting,
  type SpawnOutcome,
  type SpawnRequest,
} from './spawner.js';
import type { HelperNotice, HelperRequest, HelperResult, HelperRunOptions, HelperRunner } from './types.js';
import { afterPendingIo, type IoTimer } from '../../util/io-timer.js';
import { makeRedactor, type Redactor } from '../../util/redact.js';

export const DEFAULT_HELPER_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
export const DEFAULT_MAX_STDERR_BYTES = 64 * 1024;

/** After killing a helper, how long to wait for its pipes to close (a process that left the
 * group may hold them open) before giving up on them. */
const PIPE_CLOSE_GRACE_MS = 1000;

/**
 * How long after the helper's limit (and the pipe grace) a started run may go unreported before
 * this process stops waiting for the spawner. Only a spawner that stopped working hits it: the
 * spawner reports every run by then, so a generous margin costs nothing and keeps a merely busy
 * spawner from being second-guessed.
 */
const SPAWNER_REPORT_SLACK_MS = 30_000;

export interface ProcessHelperOptions {
  /** the `helper` setting, split like a shell would but run without one */
  readonly command: string;
  /** wall-clock limit per run; default 10 000 ms (the fixed upstream value) */
  readonly timeoutMs?: number;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** stdout cap; a helper printing more is killed; default 1 MiB */
  readonly maxOutputBytes?: number;
  /** stderr kept for logging (the rest is dropped, not an error); default 64 KiB */
  readonly maxStderrBytes?: number;
  /** spawner processes that start the helpers; default one per core, at most MAX_SPAWNERS (see spawner.ts) */
  readonly spawners?: number;
  /**
   * which companion program starts the helpers: 'node' (default), 'python3', 'auto'
   * (python3 where it works, else node), or 'none' (this process itself; see spawner.ts)
   */
  readonly spawner?: SpawnerSetting;
}

/** The log line for how the spawner choice turned out. */
export function spawnerNotice(o: SpawnerOutcome): HelperNotice {
  if (o.unavailable !== undefined)
    return {
      level: 'warn',
      message:
        `helper_spawner ${o.kind}: it cannot start the helper processes (${o.unavailable}); ` +
        `every helper run fails until it can`,
    };
  if (o.fallbackReason !== undefined)
    return {
      level: 'warn',
      message:
        `python3 cannot start the helper processes (${o.fallbackReason}): ` +
        `the node spawner starts them, at about twice the CPU per helper`,
    };
  if (o.kind === 'none')
    return {
      level: 'info',
      message: 'helper processes are started by the provisioner process itself (helper_spawner none)',
    };
  return {
    level: 'info',
    message: `helper processes are started by the ${o.kind} spawner${o.kind === 'python3' ? ' (posix_spawn)' : ''}`,
  };
}

/** What a failed run adds to its error besides the kind and reason. */
interface ErrorExtra {
  readonly signal?: string | null;
  readonly cause?: unknown;
  /** the reason without the helper's text, when the reason quotes it */
  readonly publicReason?: string;
}

/** What every run of a ProcessHelper reads of its settings. */
interface RunLimits {
  /** the program that runs (argv[0]), named in errors */
  readonly helper: string;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly maxStderrBytes: number;
}

/** Why a run failed, once it is known. */
interface RunFailure {
  readonly kind: HelperErrorKind;
  readonly reason: string;
}

/** Where a run's outcome goes. */
interface RunEnds {
  /** the run is over: called before its promise settles */
  over(): void;
  resolve(result: HelperResult): void;
  reject(error: HelperError): void;
}

/**
 * One run of the helper as this process sees it, from the request to the spawner to its one result or
 * error: the output the spawner reported, the failure decided here (abort, close, no report in time), the
 * backstop timer and the abort listener. #settle is the only way out, and undoes them all.
 */
class ProcessRun {
  readonly #limits: RunLimits;
  readonly #identity: string;
  readonly #signal: AbortSignal | undefined;
  readonly #redact: Redactor;
  readonly #ends: RunEnds;
  readonly #started = performance.now();
  #stdout: BoundedBuffer;
  #stderr: BoundedBuffer;
  #settled = false;
  /** decided here (the spawner kills the group, then reports once the pipes close) or reported by the spawner */
  #failure: RunFailure | undefined;
  #exitCode: number | null = null;
  #backstop: IoTimer | undefined;
  /** the caller of cancel() waiting for the run to settle */
  #onSettled: () => void = () => undefined;
  #spawned: SpawnedRun | undefined;
  readonly #onAbort = (): void =>
    this.#fail('aborted', 'aborted by the caller; killed it and the processes it started');

  constructor(limits: RunLimits, opts: HelperRunOptions, redact: Redactor, ends: RunEnds) {
    this.#limits = limits;
    this.#identity = opts.identity;
    this.#signal = opts.signal;
    this.#redact = redact;
    this.#ends = ends;
    this.#stdout = new BoundedBuffer(limits.maxOutputBytes);
    this.#stderr = new BoundedBuffer(limits.maxStderrBytes);
  }

  /** Hands the run to a spawner; an abort of the caller's signal from now on kills it. */
  start(spawners: HelperSpawners, req: SpawnRequest): void {
    this.#spawned = spawners.run(req, {
      onStarted: () => this.#onStarted(),
      onDone: (o) => this.#onDone(o),
    });
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  /** Kills the run (the runner is closing); resolves once it has settled. */
  cancel(): Promise<void> {
    return new Promise<void>((done) => {
      if (this.#settled) return done();
      this.#onSettled = done;
      this.#fail('aborted', 'the helper runner was closed; killed it and the processes it started');
    });
  }

  /** The spawner started the helper: from now on it owes a report, by the helper's limit and some slack. */
  #onStarted(): void {
    if (this.#settled) return;
    const { timeoutMs } = this.#limits;
    const waitMs = timeoutMs + PIPE_CLOSE_GRACE_MS + SPAWNER_REPORT_SLACK_MS;
    // a report that arrived while this loop was busy is read before giving up on it
    this.#backstop = afterPendingIo(waitMs, () => {
      if (this.#settled) return;
      this.#spawned?.kill();
      this.#settle(
        this.#error(
          'timeout',
          `timed out after ${timeoutMs} ms: the helper spawner did not report on it ${waitMs} ms after ` +
            `starting it; killed it and the processes it started`,
        ),
      );
    });
  }

  /** The spawner's report: the run's result, or the error of the failure decided here or reported by it. */
  #onDone(o: SpawnOutcome): void {
    const { helper, maxOutputBytes, maxStderrBytes } = this.#limits;
    this.#stdout = BoundedBuffer.fromParts(maxOutputBytes, o.stdout, o.stdoutBytes);
    this.#stderr = BoundedBuffer.fromParts(maxStderrBytes, o.stderr, o.stderrBytes);
    if (o.spawnError !== undefined)
      return this.#settle(this.#error('spawn', `cannot start ${helper}: ${o.spawnError}`));
    if (o.lost !== undefined) {
      const failure = this.#failure;
      return this.#settle(
        failure === undefined
          ? this.#error('spawn', `${o.lost} before ${helper} finished`)
          : this.#error(failure.kind, failure.reason),
      );
    }
    if (o.exitCode !== null) this.#exitCode = o.exitCode;
    this.#failure ??= this.#failureReported(o);
    const failure = this.#failure;
    if (failure !== undefined) {
      // pipes given up on after the grace period: no close status
      if (o.forced) return this.#settle(this.#error(failure.kind, failure.reason));
      this.#exitCode = o.code;
      return this.#settle(this.#error(failure.kind, failure.reason, { signal: o.signal }));
    }
    this.#exitCode = o.code;
    this.#settle(this.#outcome(o.code, o.signal));
  }

  /**
   * The spawner killed the group itself when stdout went over the cap or the run went over
   * its time limit (as the spawner measured it: from its spawn of the helper).
   */
  #failureReported(o: SpawnOutcome): RunFailure | undefined {
    if (o.tooLarge)
      return {
        kind: 'too-large',
        reason: `printed more than ${this.#limits.maxOutputBytes} bytes on stdout; killed it`,
      };
    if (o.timedOut) return { kind: 'timeout', reason: this.#timeoutReason(o.exitAfterMs, o.exitCode) };
    return undefined;
  }

  /** We decided the run failed: the spawner kills the group, then reports once the pipes close. */
  #fail(kind: HelperErrorKind, reason: string): void {
    if (this.#settled || this.#failure !== undefined) return;
    this.#failure = { kind, reason };
    this.#spawned?.kill();
  }

  #settle(outcome: HelperResult | HelperError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#backstop?.cancel();
    this.#signal?.removeEventListener('abort', this.#onAbort);
    this.#ends.over();
    this.#onSettled();
    if (outcome instanceof HelperError) this.#ends.reject(outcome);
    else this.#ends.resolve(outcome);
  }

  #elapsed(): number {
    return Math.round(performance.now() - this.#started);
  }

  // as printed: HelperError redacts what it quotes and keeps the sizes for its public message
  #output(): HelperOutput {
    return {
      stdout: this.#stdout.toText(),
      stderr: this.#stderr.toText(),
      stdoutBytes: this.#stdout.totalBytes,
      stderrBytes: this.#stderr.totalBytes,
    };
  }

  #error(kind: HelperErrorKind, reason: string, extra: ErrorExtra = {}): HelperError {
    return new HelperError({
      kind,
      helper: this.#limits.helper,
      identity: this.#identity,
      reason,
      ...(extra.publicReason !== undefined ? { publicReason: extra.publicReason } : {}),
      output: kind === 'spawn' ? undefined : this.#output(),
      exitCode: this.#exitCode,
      signal: extra.signal ?? null,
      durationMs: this.#elapsed(),
      cause: extra.cause,
      redact: this.#redact,
    });
  }

  #timeoutReason(exitAfterMs: number | null, exitCode: number | null): string {
    const { timeoutMs } = this.#limits;
    if (exitAfterMs === null) return `timed out after ${timeoutMs} ms; killed it and the processes it started`;
    return (
      `timed out after ${timeoutMs} ms: it exited with status ${String(exitCode)} after ${exitAfterMs} ms ` +
      `but a process it started kept its stdout or stderr open; killed that process group`
    );
  }

  #outcome(code: number | null, sig: NodeJS.Signals | null): HelperResult | HelperError {
    if (sig !== null) return this.#error('signal', `was killed by signal ${sig}`, { signal: sig });
    if (code !== 0) {
      let hint = '';
      try {
        parseHelperReply(this.#stdout.toBuffer());
        hint =
          ' (its reply is discarded: a non-zero exit always fails the run; to retry later exit 0 with "defer": true)';
      } catch {
        // not a valid reply: nothing to point out
      }
      return this.#error('exit', `exited with status ${String(code)}${hint}`);
    }
    try {
      return {
        reply: parseHelperReply(this.#stdout.toBuffer()),
        stderr: this.#redact(this.#stderr.toText()),
        durationMs: this.#elapsed(),
      };
    } catch (err) {
      if (err instanceof HelperReplyError)
        return this.#error(err.kind, reasonForReplyError(err), {
          cause: err,
          publicReason: publicReasonForReplyError(err),
        });
      throw err;
    }
  }
}

export class ProcessHelper implements HelperRunner {
  readonly #argv: [string, ...string[]];
  readonly #timeoutMs: number;
  readonly #maxOutputBytes: number;
  readonly #maxStderrBytes: number;
  /** runs in progress, so close() can stop them */
  readonly #active = new Set<ProcessRun>();
  #closed = false;
  /** start the helper processes, away from this process's event loop (see spawner.ts) */
  readonly #spawners: HelperSpawners;

  /** Throws HelperCommandError when the command cannot be split (fail at start-up, not per node). */
  readonly #options: ProcessHelperOptions;

  constructor(options: ProcessHelperOptions) {
    this.#options = options;
    this.#argv = parseHelperCommand(options.command);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_HELPER_TIMEOUT_MS;
    this.#maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    this.#maxStderrBytes = options.maxStderrBytes ?? DEFAULT_MAX_STDERR_BYTES;
    this.#spawners = new HelperSpawners(options.spawners, options.spawner);
  }

  /** The companion program that starts the helpers (under 'auto', python3 until it failed to come up). */
  get spawner(): { readonly kind: SpawnerKind; readonly fallbackReason?: string } {
    const why = this.#spawners.fallbackReason;
    return { kind: this.#spawners.companion, ...(why === undefined ? {} : { fallbackReason: why }) };
  }

  /**
   * Starts the first spawner now, so that the first node does not
   * wait for it; `notice` hears which one starts the helpers.
   */
  warmUp(notice?: (n: HelperNotice) => void): void {
    if (this.#closed) return;
    this.#spawners.warmUp(notice === undefined ? undefined : (o) => notice(spawnerNotice(o)));
  }

  /** The program that runs (argv[0]); named in errors instead of the full command line. */
  get program(): string {
    return this.#argv[0];
  }

  run(req: HelperRequest, opts: HelperRunOptions): Promise<HelperResult> {
    const redact = makeRedactor(requestSecrets(req));
    if (this.#closed || opts.signal?.aborted === true) {
      const reason = this.#closed ? 'the helper runner is closed' : 'aborted by the caller before the helper started';
      return Promise.reject(
        new HelperError({ kind: 'aborted', helper: this.program, identity: opts.identity, reason, redact }),
      );
    }
    return this.#runProcess(encodeHelperRequest(req), opts, redact);
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#active].map((run) => run.cancel()));
    await this.#spawners.close();
  }

  #runProcess(input: string, opts: HelperRunOptions, redact: Redactor): Promise<HelperResult> {
    const limits: RunLimits = {
      helper: this.program,
      timeoutMs: this.#timeoutMs,
      maxOutputBytes: this.#maxOutputBytes,
      maxStderrBytes: this.#maxStderrBytes,
    };
    return new Promise<HelperResult>((resolve, reject) => {
      const run: ProcessRun = new ProcessRun(limits, opts, redact, {
        over: () => this.#active.delete(run),
        resolve,
        reject,
      });
      run.start(this.#spawners, {
        argv: this.#argv,
        cwd: this.#options.cwd ?? process.cwd(),
        env: this.#options.env,
        input,
        maxStdout: this.#maxOutputBytes,
        maxStderr: this.#maxStderrBytes,
        pipeGraceMs: PIPE_CLOSE_GRACE_MS,
        timeoutMs: this.#timeoutMs,
      });
      this.#active.add(run);
    });
  }
}

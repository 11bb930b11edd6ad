// A pool of long-lived helper processes speaking JSON lines, for sites where starting an
// interpreter per node is the bottleneck (a Ruby helper that loads a CA client, say).
//
// Protocol (docs/helpers.md): the provisioner writes one request per line — exactly the JSON a
// one-shot helper reads on stdin, which never contains a raw newline — and the helper answers each
// with its reply JSON on one line, in order, one request at a time. Blank lines on stdout are
// ignored; stderr is free-form and logged. A process that exits, times out, prints something that
// is not JSON, prints a line over the output cap, or prints while idle is killed (with its process
// group) and replaced on demand; the request it was serving fails with the matching HelperError.
// A line that is JSON but not a valid reply fails only that request: the process is still in step.
// EOF on stdin asks the helper to finish.
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  HelperError,
  HelperReplyError,
  publicReasonForReplyError,
  reasonForReplyError,
  type HelperErrorKind,
} from './errors.js';
import { BoundedBuffer, requestSecrets } from './output.js';
import { DEFAULT_HELPER_TIMEOUT_MS, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_STDERR_BYTES } from './process-helper.js';
import { parseHelperReply } from './reply.js';
import { encodeHelperRequest } from './request.js';
import { killProcessGroup, parseHelperCommand, spawnHelper } from './spawn.js';
import type { HelperRequest, HelperResult, HelperRunOptions, HelperRunner } from './types.js';
import { errorText } from '../../util/values.js';
import { settledWithin } from '../../util/deadline.js';
import { afterPendingIo, type IoTimer } from '../../util/io-timer.js';
import { makeRedactor, type Redactor } from '../../util/redact.js';

export const DEFAULT_POOL_SIZE = 4;
/** how long a process above the warm count may sit idle before it is asked to finish */
export const DEFAULT_POOL_IDLE_MS = 30_000;
const DEFAULT_CLOSE_GRACE_MS = 2000;
/**
 * How long close() waits for a SIGKILLed process to be reported gone. SIGKILL cannot be caught or
 * ignored, but a process stuck in the kernel (a hung NFS read) is not gone until that returns:
 * close() must not wait for it.
 */
const KILL_WAIT_MS = 2000;

export interface PoolHelperOptions {
  readonly command: string;
  /**
   * most helper processes at once; default 4. Processes start when every running one is busy, so
   * a helper that waits (a CA, a CMDB) gets one run in flight per caller up to this number.
   */
  readonly size?: number;
  /**
   * processes started by warmUp() and kept however idle they are; default the CPU count, at most
   * `size`. The ones above it are asked to finish after `idleMs` without a request.
   */
  readonly warm?: number;
  /** idle time after which a process above `warm` finishes; default 30 000 ms */
  readonly idleMs?: number;
  /**
   * requests a process may have unanswered (written, not yet answered): 1 (the default) waits for
   * each reply before writing the next request; more lets one write and one wake-up of the helper
   * carry several. Replies still come one per request, in order.
   */
  readonly depth?: number;
  /** limit per request, counted from the moment a process takes it; default 10 000 ms */
  readonly timeoutMs?: number;
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** longest reply line; default 1 MiB */
  readonly maxOutputBytes?: number;
  /** stderr kept per request; default 64 KiB */
  readonly maxStderrBytes?: number;
  /** how long close() lets processes finish after closing their stdin; default 2000 ms */
  readonly closeGraceMs?: number;
}

interface Job {
  readonly input: string;
  readonly identity: string;
  readonly signal: AbortSignal | undefined;
  readonly redact: Redactor;
  readonly resolve: (result: HelperResult) => void;
  readonly reject: (err: HelperError) => void;
  onAbort: () => void;
}

/** What a failed request adds to its error besides the kind and reason. */
interface FailureExtra {
  readonly code?: number | null;
  readonly sig?: string | null;
  /** the reason without the helper's text, when the reason quotes it */
  readonly publicReason?: string;
}

interface Settings {
  readonly argv: [string, ...string[]];
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly maxStderrBytes: number;
  readonly cwd: string | undefined;
  readonly env: NodeJS.ProcessEnv | undefined;
}

export class PoolHelper implements HelperRunner {
  readonly #settings: Settings;
  readonly #size: number;
  readonly #warm: number;
  readonly #idleMs: number;
  readonly #depth: number;
  readonly #closeGraceMs: number;
  readonly #queue: Job[] = [];
  readonly #workers = new Set<PoolWorker>();
  /** processes asked to finish for idleness, until they are gone (close() waits for them) */
  readonly #leaving = new Set<Promise<void>>();
  #idleCheck: NodeJS.Timeout | undefined;
  #closed = false;

  /**
   * Throws HelperCommandError when the command cannot be split.
   * Processes start on demand, or all at once with warmUp().
   */
  constructor(options: PoolHelperOptions) {
    const size = options.size ?? DEFAULT_POOL_SIZE;
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`helper pool size must be a positive integer, got ${size}`);
    this.#size = size;
    const warm = options.warm ?? Math.min(size, availableParallelism());
    if (!Number.isInteger(warm) || warm < 1 || warm > size)
      throw new RangeError(`helper pool warm count must be an integer from 1 to the pool size ${size}, got ${warm}`);
    this.#warm = warm;
    this.#idleMs = options.idleMs ?? DEFAULT_POOL_IDLE_MS;
    const depth = options.depth ?? 1;
    if (!Number.isInteger(depth) || depth < 1)
      throw new RangeError(`helper pool depth must be a positive integer, got ${depth}`);
    this.#depth = depth;
    this.#closeGraceMs = options.closeGraceMs ?? DEFAULT_CLOSE_GRACE_MS;
    this.#settings = {
      argv: parseHelperCommand(options.command),
      timeoutMs: options.timeoutMs ?? DEFAULT_HELPER_TIMEOUT_MS,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      maxStderrBytes: options.maxStderrBytes ?? DEFAULT_MAX_STDERR_BYTES,
      cwd: options.cwd,
      env: options.env,
    };
  }

  get program(): string {
    return this.#settings.argv[0];
  }

  /** Pids of the running helper processes (for diagnostics and tests). */
  get pids(): number[] {
    return [...this.#workers].flatMap((w) => (w.pid === undefined ? [] : [w.pid]));
  }

  killNow(): void {
    this.#closed = true;
    clearInterval(this.#idleCheck);
    for (const w of this.#workers) w.killNow();
  }

  /**
   * Starts the warm processes now, so that their start-up (an interpreter's boot) overlaps
   * the provisioner's own instead of delaying the first nodes.
   */
  warmUp(): void {
    while (!this.#closed && this.#workers.size < this.#warm) this.#workers.add(this.#newWorker());
  }

  #newWorker(): PoolWorker {
    const worker = new PoolWorker(
      this.#settings,
      (w, unanswered) => this.#retire(w, unanswered),
      () => this.#dispatch(),
    );
    if (this.#workers.size >= this.#warm && this.#idleCheck === undefined) {
      this.#idleCheck = setInterval(() => this.#finishIdle(), Math.max(10, this.#idleMs / 2));
      this.#idleCheck.unref();
    }
    return worker;
  }

  /**
   * A burst grew the pool past its warm count: the processes it no longer needs finish (stdin
   * closed, as at close()), so the pool does not keep one process per worker for ever.
   */
  #finishIdle(): void {
    const now = performance.now();
    // the oldest `warm` processes are kept (the ones warmUp started, or their replacements)
    for (const w of [...this.#workers].slice(this.#warm)) {
      if (w.load !== 0 || now - w.idleSince < this.#idleMs) continue;
      this.#workers.delete(w);
      const gone = w.shutdown(this.#closeGraceMs).finally(() => this.#leaving.delete(gone));
      this.#leaving.add(gone);
    }
    if (this.#workers.size <= this.#warm) {
      clearInterval(this.#idleCheck);
      this.#idleCheck = undefined;
    }
  }

  run(req: HelperRequest, opts: HelperRunOptions): Promise<HelperResult> {
    const redact = makeRedactor(requestSecrets(req));
    if (this.#closed || opts.signal?.aborted === true) {
      const reason = this.#closed
        ? 'the helper pool is closed'
        : 'aborted by the caller before a helper process took the request';
      return Promise.reject(
        new HelperError({ kind: 'aborted', helper: this.program, identity: opts.identity, reason, redact }),
      );
    }
    const input = `${encodeHelperRequest(req)}\n`;
    return new Promise<HelperResult>((resolve, reject) => {
      const job: Job = {
        input,
        identity: opts.identity,
        signal: opts.signal,
        redact,
        resolve,
        reject,
        onAbort: () => undefined,
      };
      // Until a process takes it, aborting just drops the job from the queue.
      job.onAbort = this.#queueAbort(job);
      opts.signal?.addEventListener('abort', job.onAbort, { once: true });
      this.#queue.push(job);
      this.#dispatch();
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const job of this.#queue.splice(0)) {
      job.signal?.removeEventListener('abort', job.onAbort);
      job.reject(this.#queuedError(job, 'the helper pool was closed before a helper process took the request'));
    }
    clearInterval(this.#idleCheck);
    await Promise.all([...[...this.#workers].map((w) => w.shutdown(this.#closeGraceMs)), ...this.#leaving]);
    // Every process has exited or been SIGKILLed (one stuck in the kernel finishes on its own);
    // their 'close' events (which retire them) may still be queued.
    this.#workers.clear();
  }

  #queuedError(job: Job, reason: string): HelperError {
    return new HelperError({
      kind: 'aborted',
      helper: this.program,
      identity: job.identity,
      reason,
      redact: job.redact,
    });
  }

  /**
   * Hands queued jobs to processes: an idle one first, then a new one up to the pool size, then
   * the least loaded one below the depth.
   */
  #dispatch(): void {
    while (this.#queue.length > 0 && !this.#closed) {
      let worker: PoolWorker | undefined;
      for (const w of this.#workers) if (w.load < (worker?.load ?? this.#depth)) worker = w;
      if (worker === undefined || (worker.load > 0 && this.#workers.size < this.#size)) {
        if (this.#workers.size >= this.#size) return;
        worker = this.#newWorker();
        this.#workers.add(worker);
      }
      const job = this.#queue.shift() as Job;
      job.signal?.removeEventListener('abort', job.onAbort);
      worker.take(job);
    }
  }

  /** A process left the pool; what it had not started goes back to the front of the queue. */
  #retire(worker: PoolWorker, unanswered: Job[]): void {
    if (!this.#workers.delete(worker) && unanswered.length === 0) return; // one that finished for idleness
    for (const job of unanswered.reverse()) {
      if (job.signal?.aborted === true) continue;
      job.onAbort = this.#queueAbort(job);
      job.signal?.addEventListener('abort', job.onAbort, { once: true });
      this.#queue.unshift(job);
    }
    this.#dispatch();
  }

  #queueAbort(job: Job): () => void {
    return () => {
      const at = this.#queue.indexOf(job);
      if (at < 0) return;
      this.#queue.splice(at, 1);
      job.reject(this.#queuedError(job, 'aborted by the caller while waiting for a free helper process'));
    };
  }
}

/**
 * One long-lived helper process. It serves its jobs in order: up to `depth` are written to its
 * stdin before the first is answered (depth 1: the next request only after the reply), and each
 * reply line answers the oldest. Requests written within one event-loop turn go out as one write.
 */
class PoolWorker {
  readonly #child: ReturnType<typeof spawnHelper> | undefined;
  readonly #stderr: BoundedBuffer;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /**
   * Written and not yet answered, oldest first: the first is the one the helper works on. A job
   * whose caller gave up while it waited behind others stays in its place, so that its answer,
   * when it comes, is matched and dropped.
   */
  readonly #jobs: { readonly job: Job; abandoned: boolean }[] = [];
  #headStarted = 0;
  #idleSince = performance.now();
  #headTimer: IoTimer | undefined;
  #corked = false;
  #dead = false;
  #startError: string | undefined;
  /** resolves when the process has exited (or never started) */
  readonly #exited: Promise<void>;
  readonly #settings: Settings;
  readonly #onRetire: (w: PoolWorker, unanswered: Job[]) => void;
  readonly #onIdle: () => void;

  constructor(settings: Settings, onRetire: (w: PoolWorker, unanswered: Job[]) => void, onIdle: () => void) {
    this.#settings = settings;
    this.#onRetire = onRetire;
    this.#onIdle = onIdle;
    this.#stderr = new BoundedBuffer(settings.maxStderrBytes);
    let markExited: () => void = () => undefined;
    this.#exited = new Promise<void>((resolve) => (markExited = resolve));
    try {
      this.#child = spawnHelper(settings.argv, { cwd: settings.cwd, env: settings.env });
    } catch (err) {
      this.#child = undefined;
      markExited();
      this.#startError = errorText(err);
      return;
    }
    const child = this.#child;
    child.on('error', (err) => {
      if (child.pid === undefined) {
        markExited();
        this.#die('spawn', `cannot start ${this.#program}: ${err.message}`);
      }
    });
    child.stdout.on('data', (chunk: Buffer) => this.#onStdout(chunk));
    child.stderr.on('data', (chunk: Buffer) => {
      this.#stderr.push(chunk);
    });
    child.stdin.on('error', () => undefined); // EPIPE after the process died; 'close' reports it
    child.on('exit', () => markExited());
    // 'close' (not 'exit') so that a reply printed just before exiting is read first.
    child.on('close', (code: number | null, sig: NodeJS.Signals | null) => {
      if (child.pid === undefined) return;
      const how = sig !== null ? `was killed by signal ${sig}` : `exited with status ${String(code)}`;
      this.#die(sig !== null ? 'signal' : 'exit', `${how} before answering`, { code, sig });
    });
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** when it last had nothing to do (meaningful while load is 0) */
  get idleSince(): number {
    return this.#idleSince;
  }

  /** requests written and not answered */
  get load(): number {
    return this.#dead ? Number.POSITIVE_INFINITY : this.#jobs.length;
  }

  get #program(): string {
    return this.#settings.argv[0];
  }

  take(job: Job): void {
    this.#jobs.push({ job, abandoned: false });
    if (this.#child === undefined) {
      this.#die('spawn', `cannot start ${this.#program}: ${this.#startError ?? 'unknown error'}`);
      return;
    }
    job.onAbort = () => this.#abort(job);
    job.signal?.addEventListener('abort', job.onAbort, { once: true });
    if (this.#jobs.length === 1) this.#startHead();
    const stdin = this.#child.stdin;
    if (!this.#corked) {
      this.#corked = true;
      stdin.cork();
      setImmediate(() => {
        this.#corked = false;
        stdin.uncork();
      });
    }
    stdin.write(job.input);
  }

  /** SIGKILL to the process group, nothing else: see PoolHelper.killNow. */
  killNow(): void {
    this.#kill();
  }

  /**
   * Closes stdin, waits up to `graceMs` for the process to finish, then kills its group and waits
   * (bounded) for it to be gone. Always ends: a process that ignores EOF and signals is SIGKILLed.
   */
  async shutdown(graceMs: number): Promise<void> {
    if (this.#child === undefined) return;
    this.#child.stdin.end();
    if (await settledWithin(this.#exited, graceMs)) return;
    this.#die('aborted', `the helper pool was closed and it did not finish within ${graceMs} ms; killed it`);
    // #die does nothing for a worker that died of something else during the grace (it killed
    // the process then): that kill may not have been the last word if the process is still here
    this.#kill();
    await settledWithin(this.#exited, KILL_WAIT_MS);
  }

  /**
   * SIGKILL to the process group and to the process itself: a helper that moved itself into
   * another group would escape the group kill. child.kill() signals only a process Node has not
   * seen exit, so the pid is never one the system reused.
   */
  #kill(): void {
    const child = this.#child;
    if (child === undefined) return;
    killProcessGroup(child);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  /**
   * The time limit runs for the request the helper works on: the oldest unanswered one. An answer
   * that arrived in time while this process's event loop was busy is read before the limit is
   * applied (afterPendingIo), and is not called a timeout.
   */
  #startHead(): void {
    this.#headTimer?.cancel();
    this.#headStarted = performance.now();
    this.#headTimer = afterPendingIo(this.#settings.timeoutMs, () =>
      this.#die(
        'timeout',
        `timed out after ${this.#settings.timeoutMs} ms without answering; killed it and the processes it started`,
      ),
    );
  }

  /**
   * The caller gave up on `job`. The helper is working on the oldest: kill it (as a one-shot helper
   * is killed). A later one has not started: it fails now and its answer, when it comes, is dropped.
   */
  #abort(job: Job): void {
    const at = this.#jobs.findIndex((e) => e.job === job);
    const entry = this.#jobs[at];
    if (entry === undefined || entry.abandoned) return;
    if (at === 0) {
      this.#die('aborted', 'aborted by the caller; killed it and the processes it started');
      return;
    }
    entry.abandoned = true;
    job.reject(
      this.#error(
        job,
        'aborted',
        'aborted by the caller while it waited behind other requests of its helper process',
        '',
      ),
    );
  }

  #onStdout(chunk: Buffer): void {
    if (this.#dead) return;
    let rest = chunk;
    let newline = rest.indexOf(0x0a);
    while (newline >= 0) {
      this.#pending.push(rest.subarray(0, newline));
      const line = Buffer.concat(this.#pending);
      this.#pending = [];
      this.#pendingBytes = 0;
      rest = rest.subarray(newline + 1);
      this.#onLine(line);
      if (this.#dead) return;
      newline = rest.indexOf(0x0a);
    }
    if (rest.length === 0) return;
    this.#pending.push(rest);
    this.#pendingBytes += rest.length;
    if (this.#pendingBytes > this.#settings.maxOutputBytes) {
      this.#die('too-large', `printed a line longer than ${this.#settings.maxOutputBytes} bytes on stdout; killed it`);
    }
  }

  #onLine(line: Buffer): void {
    const text = line.toString('utf8');
    if (text.trim() === '') return;
    const head = this.#jobs[0];
    if (head?.abandoned === true) {
      // the answer to a request its caller gave up on: only its place in the order mattered
      this.#jobs.shift();
      this.#answered();
      return;
    }
    const job = head?.job;
    if (job === undefined) {
      this.#die('invalid-json', 'printed on stdout while it had no request; killed it', { line: text });
      return;
    }
    let reply;
    try {
      reply = parseHelperReply(text);
    } catch (err) {
      if (!(err instanceof HelperReplyError)) throw err;
      if (err.kind === 'invalid-reply') {
        this.#finish(
          this.#error(job, err.kind, reasonForReplyError(err), text, { publicReason: publicReasonForReplyError(err) }),
        );
        return;
      }
      const why = (reason: string): string =>
        `${reason} (pool helpers print each reply as one line of JSON); killed it`;
      this.#die(err.kind, why(reasonForReplyError(err)), {
        line: text,
        publicReason: why(publicReasonForReplyError(err)),
      });
      return;
    }
    this.#finish({ reply, stderr: job.redact(this.#stderr.toText()), durationMs: this.#elapsed() });
  }

  /** Completes the oldest job while the process stays in the pool. */
  #finish(result: HelperResult | HelperError): void {
    const job = this.#jobs.shift()?.job;
    if (job === undefined) return;
    job.signal?.removeEventListener('abort', job.onAbort);
    if (result instanceof HelperError) job.reject(result);
    else job.resolve(result);
    this.#answered();
  }

  /** After each answer: the next request's clock starts, its stderr is its own. */
  #answered(): void {
    this.#stderr.clear();
    this.#headTimer?.cancel();
    this.#headTimer = undefined;
    if (this.#jobs.length > 0) this.#startHead();
    else this.#idleSince = performance.now();
    this.#onIdle();
  }

  /**
   * Kills the process group and leaves the pool. The request it was working on fails; the ones
   * written after it had not started, so the pool hands them to another process.
   */
  #die(kind: HelperErrorKind, reason: string, extra: FailureExtra & { line?: string } = {}): void {
    if (this.#dead) return;
    this.#dead = true;
    this.#headTimer?.cancel();
    this.#kill();
    const entries = this.#jobs.splice(0);
    for (const e of entries) e.job.signal?.removeEventListener('abort', e.job.onAbort);
    const working = entries.shift();
    if (working !== undefined && !working.abandoned) {
      const stdout = extra.line ?? Buffer.concat(this.#pending).toString('utf8');
      working.job.reject(this.#error(working.job, kind, reason, stdout, extra));
    }
    this.#onRetire(
      this,
      entries.filter((e) => !e.abandoned).map((e) => e.job),
    );
  }

  #error(job: Job, kind: HelperErrorKind, reason: string, stdout: string, extra: FailureExtra = {}): HelperError {
    return new HelperError({
      kind,
      helper: this.#program,
      identity: job.identity,
      reason,
      ...(extra.publicReason !== undefined ? { publicReason: extra.publicReason } : {}),
      // as printed: HelperError redacts what it quotes and keeps the sizes for its public message
      output:
        kind === 'spawn' ? undefined : { stdout, stderr: this.#stderr.toText(), stderrBytes: this.#stderr.totalBytes },
      exitCode: extra.code ?? null,
      signal: extra.sig ?? null,
      durationMs: this.#elapsed(),
      redact: job.redact,
    });
  }

  #elapsed(): number {
    return Math.round(performance.now() - this.#headStarted);
  }
}

// Progress display: a live single line on a terminal (redrawn ~10 times a second), plain lines
// every 2 s otherwise. The formatting is pure so it can be tested; the reporter only schedules it.

/** What the demo knows at one moment, from the provisioner's status and the fleet's states. */
export interface ProgressSnapshot {
  /** fleet size */
  readonly nodes: number;
  /** nodes the provisioner has seen (discovery or startup event) */
  readonly found: number;
  readonly queued: number;
  readonly provisioning: number;
  /** nodes that restarted out of provisioning mode (the fleet's count) */
  readonly done: number;
  /** nodes whose last attempt failed or was deferred and that wait for a retry */
  readonly failed: number;
  readonly elapsedMs: number;
}

/** `m:ss`, or `h:mm:ss` from an hour on. */
export function formatElapsed(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** Provisioned nodes per second since the start; 0 before any time has passed. */
export function ratePerSecond(done: number, elapsedMs: number): number {
  return elapsedMs > 0 ? (done * 1000) / elapsedMs : 0;
}

function formatRate(perSecond: number): string {
  return perSecond >= 100 ? perSecond.toFixed(0) : perSecond.toFixed(1);
}

/** `[#####.....]` with `width` cells between the brackets. */
export function progressBar(fraction: number, width: number): string {
  const cells = Math.max(1, Math.floor(width));
  const filled = Math.round(Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0)) * cells);
  return `[${'#'.repeat(filled)}${'.'.repeat(cells - filled)}]`;
}

function counters(s: ProgressSnapshot, pad = 0, sep = '  '): string {
  const n = (v: number): string => String(v).padStart(pad);
  const rate = formatRate(ratePerSecond(s.done, s.elapsedMs)).padStart(pad > 0 ? 5 : 0);
  return [
    `found ${n(s.found)}`,
    `queued ${n(s.queued)}`,
    `provisioning ${n(s.provisioning)}`,
    `done ${n(s.done)}`,
    `failed ${n(s.failed)}`,
    `${rate}/s`,
    formatElapsed(s.elapsedMs),
  ].join(sep);
}

/**
 * The terminal line: a bar (up to 30 cells, left out on a narrow terminal), then the counters,
 * padded to the fleet size's digits so the line does not jump as numbers grow. Never longer than
 * `columns - 1` characters so it cannot wrap (a wrapped line is not redrawn in place).
 */
export function formatProgressLine(s: ProgressSnapshot, terminalColumns?: number): string {
  // a pseudo-terminal may report 0 columns: assume a usual width then
  const columns = terminalColumns !== undefined && terminalColumns > 0 ? terminalColumns : 100;
  const pad = String(s.nodes).length;
  const done = `${String(s.done).padStart(pad)}/${s.nodes}`;
  let text = `${done}  ${counters(s, pad)}`;
  if (text.length > columns - 1) text = `${done} ${counters(s, pad, ' ')}`; // an 80-column terminal
  const room = Math.min(30, columns - 1 - text.length - 3); // 2 brackets + 1 space
  const line = room >= 10 ? `${progressBar(s.nodes > 0 ? s.done / s.nodes : 0, room)} ${text}` : text;
  return line.length > columns - 1 ? line.slice(0, Math.max(0, columns - 1)) : line;
}

/** The line written every 2 s when stdout is not a terminal (CI logs, pipes). */
export function formatProgressPlain(s: ProgressSnapshot): string {
  const pct = s.nodes > 0 ? Math.floor((100 * s.done) / s.nodes) : 0;
  return `progress: ${s.done}/${s.nodes} provisioned (${pct}%)  ${counters(s)}`;
}

/** Where a terminal line goes: `write` without an added newline; `columns` is the terminal width. */
export interface TerminalSink {
  write(text: string): void;
  readonly columns?: number | undefined;
}

export interface ProgressReporterOptions {
  readonly sample: () => ProgressSnapshot;
  /** a terminal: live line; absent: plain lines through `line` */
  readonly terminal?: TerminalSink | undefined;
  readonly line: (text: string) => void;
  readonly terminalIntervalMs?: number;
  readonly plainIntervalMs?: number;
}

const CLEAR_LINE = '\r\x1b[2K';

export class ProgressReporter {
  readonly #opts: ProgressReporterOptions;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: ProgressReporterOptions) {
    this.#opts = opts;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    const terminal = this.#opts.terminal;
    const every =
      terminal !== undefined ? (this.#opts.terminalIntervalMs ?? 100) : (this.#opts.plainIntervalMs ?? 2000);
    this.#timer = setInterval(() => this.#draw(), every);
    this.#timer.unref();
    if (terminal !== undefined) this.#draw();
  }

  /** Draws the last state once more; on a terminal the line is then ended so later output starts fresh. */
  stop(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#draw();
    this.#opts.terminal?.write('\n');
  }

  #draw(): void {
    const s = this.#opts.sample();
    const terminal = this.#opts.terminal;
    if (terminal !== undefined) terminal.write(CLEAR_LINE + formatProgressLine(s, terminal.columns));
    else this.#opts.line(formatProgressPlain(s));
  }
}

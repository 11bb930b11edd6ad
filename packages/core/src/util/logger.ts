// Structured logging with winston: one logger per provisioner instance (field `site`), children per
// host (field `host`). Secrets never reach a transport: a format redacts well-known secret fields,
// and blanks PEM blocks, JWTs and nkey seeds in every message (util/redact.ts; the texts a message
// quotes from helpers and nodes were redacted in full where they were quoted). Then every control
// character in the message and the fields is written as a visible escape (util/visible-text.ts):
// text a node sent cannot move the cursor of a terminal showing the log, nor start a line of its own.
import winston from 'winston';
import type { Logger } from 'winston';
import { maskKnownSecrets } from './redact.js';
import { visibleStrings, visibleText } from './visible-text.js';

export type { Logger } from 'winston';

/** The log levels of the provisioner's `loglevel` key (the Go provisioner's logrus names). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'fatal';

export interface LoggerOptions {
  /** undefined or "stdout": standard output; "stderr"; "discard"; anything else is a file path (JSON lines) */
  logfile?: string | undefined;
  /** text lines to this stream instead (logfile is then not used) */
  stream?: NodeJS.WritableStream | undefined;
  loglevel?: LogLevel | undefined;
  /** forces debug */
  debug?: boolean;
  site?: string;
  /** extra static fields */
  fields?: Record<string, unknown>;
}

// Field names whose values are secrets (provisioning token, JWT claims cht/chpwd, passwords, keys).
const SECRET_FIELDS = new Set([
  'token',
  'password',
  'pass',
  'cht',
  'chpwd',
  'jwt',
  'seed',
  'key',
  'private_key',
  'server_jwt',
  'secret',
]);

/** winston only knows npm levels: Choria's `fatal` maps to `error`. */
export function winstonLevel(level: LogLevel | undefined, debug = false): string {
  if (debug) return 'debug';
  switch (level) {
    case undefined:
      return 'info';
    case 'fatal':
      return 'error';
    default:
      return level;
  }
}

function redactValue(value: unknown, depth: number): unknown {
  if (depth > 4 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    out[k] =
      SECRET_FIELDS.has(k.toLowerCase()) && v !== '' && v !== undefined ? '[redacted]' : redactValue(v, depth + 1);
  }
  return out;
}

/** Characters of one string field of a log line: with the message (SHOWN_TEXT_MAX) a line stays near 4 KB. */
const LOG_FIELD_MAX = 400;

const redact = winston.format((info) => {
  // the last line of defence: whatever a message quotes, no PEM block, JWT or nkey seed is written
  if (typeof info.message === 'string') info.message = visibleText(maskKnownSecrets(info.message));
  for (const k of Object.keys(info)) {
    if (k === 'level' || k === 'message') continue;
    const v = info[k];
    if (SECRET_FIELDS.has(k.toLowerCase()) && v !== '' && v !== undefined) info[k] = '[redacted]';
    else info[k] = visibleStrings(redactValue(v, 0), 32, LOG_FIELD_MAX);
  }
  return info;
});

const textLine = winston.format.printf((info) => {
  const { level, message, timestamp, ...rest } = info;
  const fields = Object.entries(rest)
    .filter(([k]) => typeof k === 'string')
    .map(([k, v]) => `${k}=${typeof v === 'string' ? (/\s/.test(v) ? JSON.stringify(v) : v) : JSON.stringify(v)}`)
    .join(' ');
  return `${String(timestamp)} ${level.toUpperCase().padEnd(5)} ${String(message)}${fields ? ' ' + fields : ''}`;
});

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = winstonLevel(opts.loglevel, opts.debug ?? false);
  const defaultMeta: Record<string, unknown> = { ...(opts.fields ?? {}) };
  if (opts.site !== undefined && opts.site !== '') defaultMeta['site'] = opts.site;
  const target = opts.logfile;
  let transport: winston.transport;
  if (opts.stream !== undefined) {
    transport = new winston.transports.Stream({
      stream: opts.stream,
      format: winston.format.combine(winston.format.timestamp(), textLine),
    });
  } else if (target === 'discard') {
    transport = new winston.transports.Console({ silent: true });
  } else if (target === undefined || target === '' || target === 'stdout' || target === '/dev/stdout') {
    transport = new winston.transports.Console({
      format: winston.format.combine(winston.format.timestamp(), textLine),
    });
  } else if (target === 'stderr' || target === '/dev/stderr') {
    transport = new winston.transports.Console({
      stderrLevels: ['error', 'warn', 'info', 'http', 'verbose', 'debug', 'silly'],
      format: winston.format.combine(winston.format.timestamp(), textLine),
    });
  } else {
    transport = new winston.transports.File({
      filename: target,
      format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    });
  }
  return winston.createLogger({ level, defaultMeta, format: redact(), transports: [transport] });
}

/** A logger that drops everything: the default for embedded use when none is injected. */
export function silentLogger(): Logger {
  return winston.createLogger({ transports: [new winston.transports.Console({ silent: true })] });
}

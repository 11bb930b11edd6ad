// Choria's extended duration syntax (go-choria internal/util ParseDuration).
//
// Written by hand because no npm package reproduces it: Choria routes `s`/`m`/`h` endings to Go's
// time.ParseDuration (whose grammar and error texts users see in upstream messages) and the
// `d`/`w`/`M`/`y` endings to a float32 parse truncated to whole hours. Durations are returned in
// milliseconds; nanosecond arithmetic is done with BigInt because the int64 nanosecond values Go
// works with exceed 2^53 beyond ~104 days.
import { ProvisionerError } from './errors.js';

/** Thrown for any unparsable or out-of-range duration; `message` is the Go error text where Go has one. */
export class DurationError extends ProvisionerError {
  override readonly name = 'DurationError';
  readonly input: string;

  constructor(message: string, input: string) {
    super(message);
    this.input = input;
  }
}

const NS_PER_MS = 1_000_000n;
const NS_PER_HOUR = 3_600_000_000_000n;
const MAX_INT64 = (1n << 63n) - 1n;
const TWO_POW_63 = 1n << 63n;
/** Largest whole-hour count whose nanosecond value fits int64 (just over 292 years). */
const MAX_WHOLE_HOURS = Number(MAX_INT64 / NS_PER_HOUR);

const GO_UNITS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n], // µ micro sign
  ['\u03bcs', 1_000n], // μ Greek mu
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', NS_PER_HOUR],
]);

const HOURS_PER_UNIT: Readonly<Record<string, readonly number[]>> = {
  w: [7, 24],
  W: [7, 24],
  d: [24],
  D: [24],
  M: [24, 30],
  y: [24, 365],
  Y: [24, 365],
};

/**
 * Parses a Choria duration (`90s`, `1h30m`, `14d`, `1y`, ...) into milliseconds.
 * Empty or blank text is 0, as upstream. Throws {@link DurationError}.
 */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (trimmed === '') return 0;

  const last = trimmed.charAt(trimmed.length - 1);
  const factors = HOURS_PER_UNIT[last];
  if (factors !== undefined) return parseFloatUnits(trimmed.slice(0, -1), factors, text);
  if ('smhSH'.includes(last)) return nsToMs(goParseDuration(trimmed));
  throw new DurationError(`invalid time unit ${lastByteText(trimmed)}`, text);
}

/** Formats milliseconds the way Go prints a time.Duration (`1m0s`, `2h0m0s`, `1.5s`, `100µs`, `0s`). */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const whole = Math.trunc(ms);
  const ns = BigInt(whole) * NS_PER_MS + BigInt(Math.round((ms - whole) * 1e6));
  return formatNanoseconds(ns);
}

function parseFloatUnits(numberText: string, hoursPerUnit: readonly number[], input: string): number {
  const value = goParseFloat32(numberText, input);
  // Go multiplies left to right in float64, then converts to int64 (truncation toward zero).
  let hours = value;
  for (const f of hoursPerUnit) hours *= f;
  const whole = Math.trunc(hours);
  if (Math.abs(whole) > MAX_WHOLE_HOURS) {
    throw new DurationError(`duration ${goQuote(input.trim())} is out of range (more than 292 years)`, input);
  }
  return whole === 0 ? 0 : whole * 3_600_000;
}

/** strconv.ParseFloat(s, 32): Go float literal syntax, result rounded to float32. */
function goParseFloat32(s: string, input: string): number {
  const invalid = (): DurationError =>
    new DurationError(`strconv.ParseFloat: parsing ${goQuote(s)}: invalid syntax`, input);

  // Go accepts these and upstream then computes garbage from them; no configuration means them.
  if (/^[+-]?(inf|infinity)$/i.test(s) || /^nan$/i.test(s)) {
    throw new DurationError(`duration ${goQuote(input.trim())} is not a finite number`, input);
  }
  if (s.includes('_') && !underscoresOk(s)) throw invalid();
  const plain = s.replaceAll('_', '');

  let value: number;
  const hex = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?\d+)$/.exec(plain);
  if (hex !== null) {
    const intDigits = hex[2] ?? '';
    const fracDigits = hex[3] ?? '';
    if (intDigits === '' && fracDigits === '') throw invalid();
    const mantissa = parseInt(intDigits + fracDigits || '0', 16);
    const exponent = Number(hex[4]) - 4 * fracDigits.length;
    value = (hex[1] === '-' ? -1 : 1) * mantissa * 2 ** exponent;
  } else if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(plain)) {
    value = Number(plain);
  } else {
    throw invalid();
  }

  const rounded = Math.fround(value);
  if (!Number.isFinite(rounded)) {
    throw new DurationError(`strconv.ParseFloat: parsing ${goQuote(s)}: value out of range`, input);
  }
  return rounded;
}

/** Go's rule: an underscore must sit between digits (or between a base prefix and a digit). */
function underscoresOk(s: string): boolean {
  let body = s;
  if (body.startsWith('+') || body.startsWith('-')) body = body.slice(1);
  let saw: '^' | '0' | '_' | '!' = '^';
  let i = 0;
  let hex = false;
  if (body.length >= 2 && body[0] === '0' && 'bBoOxX'.includes(body[1] ?? '')) {
    i = 2;
    saw = '0';
    hex = body[1] === 'x' || body[1] === 'X';
  }
  for (; i < body.length; i++) {
    const c = body[i] ?? '';
    if ((c >= '0' && c <= '9') || (hex && /[a-fA-F]/.test(c))) {
      saw = '0';
      continue;
    }
    if (c === '_') {
      if (saw !== '0') return false;
      saw = '_';
      continue;
    }
    if (saw === '_') return false;
    saw = '!';
  }
  return saw !== '_';
}

/** Go's time.ParseDuration, returning int64 nanoseconds. */
function goParseDuration(orig: string): bigint {
  const invalid = (): DurationError => new DurationError(`time: invalid duration ${timeQuote(orig)}`, orig);
  let s = orig;
  let neg = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    neg = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') throw invalid();

  let total = 0n;
  while (s !== '') {
    const first = s[0] ?? '';
    if (!(first === '.' || (first >= '0' && first <= '9'))) throw invalid();

    const intMatch = /^\d*/.exec(s)?.[0] ?? '';
    s = s.slice(intMatch.length);
    const whole = intMatch === '' ? 0n : BigInt(intMatch);
    if (whole > TWO_POW_63) throw invalid();

    let fraction = 0n;
    let scale = 1;
    let sawFraction = false;
    if (s.startsWith('.')) {
      s = s.slice(1);
      const fracMatch = /^\d*/.exec(s)?.[0] ?? '';
      s = s.slice(fracMatch.length);
      sawFraction = fracMatch !== '';
      // Like Go, digits beyond int64 precision are ignored.
      for (const digit of fracMatch) {
        const next = fraction * 10n + BigInt(digit);
        if (fraction > MAX_INT64 / 10n || next > TWO_POW_63) break;
        fraction = next;
        scale *= 10;
      }
    }
    if (intMatch === '' && !sawFraction) throw invalid();

    const unitMatch = /^[^.0-9]*/.exec(s)?.[0] ?? '';
    if (unitMatch === '') throw new DurationError(`time: missing unit in duration ${timeQuote(orig)}`, orig);
    s = s.slice(unitMatch.length);
    const unit = GO_UNITS.get(unitMatch);
    if (unit === undefined) {
      throw new DurationError(`time: unknown unit ${timeQuote(unitMatch)} in duration ${timeQuote(orig)}`, orig);
    }

    if (whole > TWO_POW_63 / unit) throw invalid();
    let v = whole * unit;
    if (fraction > 0n) {
      // Go computes the fractional part in float64 (exact to the nanosecond for any unit up to hours).
      v += BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale)));
      if (v > TWO_POW_63) throw invalid();
    }
    total += v;
    if (total > TWO_POW_63) throw invalid();
  }
  if (neg) return -total;
  if (total > MAX_INT64) throw invalid();
  return total;
}

function nsToMs(ns: bigint): number {
  const whole = ns / NS_PER_MS;
  const rest = ns % NS_PER_MS;
  const ms = Number(whole) + Number(rest) / 1e6;
  return ms === 0 ? 0 : ms;
}

/** Go's Duration.String(). */
function formatNanoseconds(ns: bigint): string {
  if (ns === 0n) return '0s';
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < 1_000_000_000n) {
    if (u < 1_000n) out = `${u}ns`;
    else if (u < 1_000_000n) out = `${fixedPoint(u, 3)}\u00b5s`;
    else out = `${fixedPoint(u, 6)}ms`;
  } else {
    const seconds = fixedPoint(u % 60_000_000_000n, 9);
    u /= 60_000_000_000n;
    out = `${seconds}s`;
    if (u > 0n) {
      out = `${u % 60n}m${out}`;
      u /= 60n;
      if (u > 0n) out = `${u}h${out}`;
    }
  }
  return neg ? `-${out}` : out;
}

/** value / 10^decimals printed without trailing zeros (and without the point when whole). */
function fixedPoint(value: bigint, decimals: number): string {
  const divisor = 10n ** BigInt(decimals);
  const whole = value / divisor;
  const fraction = (value % divisor).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction === '' ? `${whole}` : `${whole}.${fraction}`;
}

/** Upstream prints the last byte of the text; non-ASCII bytes are shown escaped. */
function lastByteText(s: string): string {
  const bytes = Buffer.from(s, 'utf8');
  const last = bytes[bytes.length - 1] ?? 0;
  return last < 0x80 ? String.fromCharCode(last) : `\\x${last.toString(16).padStart(2, '0')}`;
}

/** Go's time package quoting: non-ASCII and control bytes as \xNN, `"` and `\` escaped. */
function timeQuote(s: string): string {
  let out = '"';
  for (const byte of Buffer.from(s, 'utf8')) {
    if (byte >= 0x80 || byte < 0x20) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    else if (byte === 0x22 || byte === 0x5c) out += `\\${String.fromCharCode(byte)}`;
    else out += String.fromCharCode(byte);
  }
  return `${out}"`;
}

/** Close to Go's strconv.Quote for the texts that appear in float parse errors. */
function goQuote(s: string): string {
  const named: Readonly<Record<string, string>> = {
    '"': '\\"',
    '\\': '\\\\',
    '\x07': '\\a',
    '\b': '\\b',
    '\f': '\\f',
    '\n': '\\n',
    '\r': '\\r',
    '\t': '\\t',
    '\v': '\\v',
  };
  let out = '"';
  for (const ch of s) {
    const special = named[ch];
    if (special !== undefined) out += special;
    else if (/\p{C}/u.test(ch)) {
      const cp = ch.codePointAt(0) ?? 0;
      out += cp < 0x80 ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
    } else out += ch;
  }
  return `${out}"`;
}

/**
 * Milliseconds for people, in log lines and error texts: "750 ms", "1.5 s", "22 s", "1 h".
 * (formatDuration above is Go's time.Duration text, for messages that mirror upstream's.)
 */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  if (Math.abs(ms) < 1_000) return `${Math.round(ms)} ms`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  return `${Number((ms / 1_000).toFixed(2))} s`;
}

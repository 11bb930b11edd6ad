// Byte and JSON helpers shared by the v1 and v2 envelope codecs.
import { createHash } from 'node:crypto';
import { isPlainObject } from '../../util/values.js';
import { ProtocolError } from '../errors.js';
import { parseForeignJson } from '../../util/json-syntax.js';

// Go decodes []byte JSON fields with the padded standard alphabet only; Node's Buffer decoder
// silently accepts anything, so the alphabet and padding are checked here first.
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function toBase64(bytes: Uint8Array | string): string {
  return (typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : Buffer.from(bytes)).toString('base64');
}

/**
 * Decodes padded standard base64 as Go's StdEncoding accepts it, or undefined. Text that survives a
 * round trip through Buffer is canonical and so valid, which native code answers for almost every
 * message; only the rest (invalid text, or the non-zero padding bits Go tolerates) meets the
 * regular expression, which on every reply cost ~7 ns per character on the hot path.
 */
function decodeBase64(text: string): Buffer | undefined {
  const bytes = Buffer.from(text, 'base64');
  if (bytes.toString('base64') === text || STRICT_BASE64.test(text)) return bytes;
  return undefined;
}

export function isStrictBase64(text: string): boolean {
  return decodeBase64(text) !== undefined;
}

/** Decodes padded standard base64, throwing a ProtocolError naming `what` otherwise. */
export function fromBase64(text: string, what: string): Buffer {
  const bytes = decodeBase64(text);
  if (bytes === undefined) throw new ProtocolError(`${what} is not valid base64`);
  return bytes;
}

/** Base64 of `bytes` as a JSON string value: base64 needs no escaping, so it is quoted, not scanned. */
export function base64Json(bytes: Uint8Array | string): RawJson {
  return new RawJson(`"${toBase64(bytes)}"`);
}

export function sha256Base64(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('base64');
}

export function md5Hex(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

export function bytesToText(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** A value already rendered as JSON text, spliced verbatim by `jsonObjectText`. */
export class RawJson {
  constructor(readonly text: string) {}
}

/**
 * Renders an object from ordered entries. Exists because JSON.stringify cannot emit a BigInt and
 * v2 `time` (Unix nanoseconds) exceeds 2^53; undefined values are left out as Go's omitempty does.
 */
export function jsonObjectText(entries: ReadonlyArray<readonly [string, unknown]>): string {
  const parts: string[] = [];
  for (const [key, value] of entries) {
    if (value === undefined) continue;
    const rendered = value instanceof RawJson ? value.text : JSON.stringify(value);
    parts.push(`${JSON.stringify(key)}:${rendered}`);
  }
  return `{${parts.join(',')}}`;
}

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return isPlainObject(value);
}

/** Parses JSON text that must be an object; `what` names the document in errors. */
export function parseJsonObject(text: string, what: string): JsonObject {
  const parsed = parseForeignJson(text, (why) => new ProtocolError(`${what} is not valid JSON: ${why}`));
  if (!isJsonObject(parsed)) throw new ProtocolError(`${what} is not a JSON object`);
  return parsed;
}

export function requireString(obj: JsonObject, key: string, what: string, opts: { nonEmpty?: boolean } = {}): string {
  const value = obj[key];
  if (typeof value !== 'string') throw new ProtocolError(`${what}: "${key}" must be a string`);
  if (opts.nonEmpty === true && value === '') throw new ProtocolError(`${what}: "${key}" must not be empty`);
  return value;
}

export function optionalString(obj: JsonObject, key: string, what: string): string | undefined {
  const value = obj[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw new ProtocolError(`${what}: "${key}" must be a string`);
  return value;
}

export function requireInteger(obj: JsonObject, key: string, what: string): number {
  const value = obj[key];
  if (typeof value !== 'number' || !Number.isInteger(value))
    throw new ProtocolError(`${what}: "${key}" must be an integer`);
  return value;
}

export function requireProtocol(obj: JsonObject, accepted: readonly string[], what: string): string {
  const value = obj['protocol'];
  if (typeof value !== 'string' || !accepted.includes(value)) {
    throw new ProtocolError(`${what}: protocol ${JSON.stringify(value ?? null)} is not ${accepted.join(' or ')}`);
  }
  return value;
}

/** Parses one envelope document: JSON text that must be an object naming one of `protocols`. */
export function readDocument(text: string, what: string, protocols: readonly string[]): JsonObject {
  const obj = parseJsonObject(text, what);
  requireProtocol(obj, protocols, what);
  return obj;
}

// Parses and validates the helper's stdout into a typed HelperReply.
//
// The rules mirror what Go's encoding/json accepts for the upstream ConfigResponse struct, so a
// helper that works with the Go provisioner works here: every key optional, unknown keys ignored,
// `null` anywhere means "not set" (Go's zero value; a `null` inside a string map or list becomes
// ""), values inside configuration/action_policies/opa_policies must be strings, and server_claims
// fields are typed. `exp` may be a number or a
// string holding a number, as Go's NumericDate accepts both. Unlike Go we reject a reply that is
// not an object (Go would accept a bare `null` and fail later at configure) and we name the
// offending path and value instead of Go's opaque decode error.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { HelperReplyError, publicKeyName } from './errors.js';
import type { HelperReply, HelperServerClaims, HelperServerPermissions } from './types.js';
import { isPlainObject as isObject } from '../../util/values.js';
import { REDACTED, isSecretName } from '../../util/redact.js';
import { parseForeignJson } from '../../util/json-syntax.js';

export { assertAcceptedByNode, assertConfigurable, replyWarnings } from './reply-checks.js';

const STRING_MAP_KEYS = ['configuration', 'action_policies', 'opa_policies'] as const;
const STRING_KEYS = ['msg', 'key', 'certificate', 'ca', 'ssldir', 'upgrade'] as const;
const BOOLEAN_KEYS = ['defer', 'shutdown'] as const;
const PERMISSION_KEYS = ['submission', 'streams', 'governor', 'service_host'] as const;

// JSON number grammar, for `exp` sent as a string.
const JSON_NUMBER = '^-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$';

const stringOrNull = { type: ['string', 'null'] };
const booleanOrNull = { type: ['boolean', 'null'] };
const stringMap = { type: ['object', 'null'], additionalProperties: stringOrNull };
const stringList = { type: ['array', 'null'], items: stringOrNull };

/** The reply's JSON Schema (exported for the test that checks it against the meta-schema). */
export const REPLY_SCHEMA = {
  type: 'object',
  properties: {
    ...Object.fromEntries(BOOLEAN_KEYS.map((k) => [k, booleanOrNull])),
    ...Object.fromEntries(STRING_KEYS.map((k) => [k, stringOrNull])),
    ...Object.fromEntries(STRING_MAP_KEYS.map((k) => [k, stringMap])),
    server_claims: {
      type: ['object', 'null'],
      properties: {
        collectives: stringList,
        ou: stringOrNull,
        exp: { type: ['number', 'string', 'null'], pattern: JSON_NUMBER },
        pub_subjects: stringList,
        permissions: {
          type: ['object', 'null'],
          properties: Object.fromEntries(PERMISSION_KEYS.map((k) => [k, booleanOrNull])),
        },
      },
    },
  },
} as const;

let compiledValidator: ValidateFunction | undefined;

/**
 * The reply validator, compiled on first use (which every CLI start would otherwise pay before its
 * first log line, `validate` included) and shared after: ajv validators are pure functions.
 * Checking the schema against JSON Schema's meta-schema first would compile that meta-schema too,
 * which costs several times the reply schema itself, on the way to the first node's
 * configuration, so it is off: the schema is a constant, and
 * a unit test checks it against the meta-schema in strict mode.
 */
function replyValidator(): ValidateFunction {
  compiledValidator ??= new Ajv({
    allErrors: true,
    strict: true,
    allowUnionTypes: true,
    validateSchema: false,
    code: { optimize: false },
  }).compile(REPLY_SCHEMA);
  return compiledValidator;
}

const MAX_REPORTED_ERRORS = 5;

/**
 * Decodes one helper reply. Throws HelperReplyError (`empty`, `invalid-json` or `invalid-reply`)
 * whose message names the offending path and value, e.g.
 * `helper reply is invalid: configuration["port"] must be a string, got number 8080`.
 */
export function parseHelperReply(stdout: string | Buffer): HelperReply {
  const text = typeof stdout === 'string' ? stdout : stdout.toString('utf8');
  if (text.trim() === '') throw new HelperReplyError('empty', 'expected one JSON object');

  // the reason says only where it broke (the error quotes the redacted output apart)
  const data = parseForeignJson(
    text,
    (why) => new HelperReplyError('invalid-json', `${Buffer.byteLength(text, 'utf8')} bytes that are not JSON: ${why}`),
  );
  return validateHelperReply(data);
}

/** Validates an already-decoded reply value (e.g. from an in-process helper). */
export function validateHelperReply(data: unknown): HelperReply {
  if (!isObject(data)) {
    throw new HelperReplyError(
      'invalid-reply',
      `the reply must be a JSON object, got ${describeValue(data)}`,
      `the reply must be a JSON object, got ${describeKind(data)}`,
    );
  }
  const validateReply = replyValidator();
  if (!validateReply(data)) {
    const errors = validateReply.errors ?? [];
    throw new HelperReplyError(
      'invalid-reply',
      formatErrors(errors, data, 'detail'),
      formatErrors(errors, data, 'public'),
    );
  }
  return normalise(data);
}

function normalise(data: Record<string, unknown>): HelperReply {
  const reply: Record<string, unknown> = {};
  for (const key of [...BOOLEAN_KEYS, ...STRING_KEYS]) {
    const value = data[key];
    if (value !== undefined && value !== null) reply[key] = value;
  }
  for (const key of STRING_MAP_KEYS) {
    const value = data[key];
    if (isObject(value)) reply[key] = stringMapOf(value);
  }
  const claims = data['server_claims'];
  if (isObject(claims)) reply['server_claims'] = serverClaimsOf(claims);
  return reply as HelperReply;
}

function serverClaimsOf(raw: Record<string, unknown>): HelperServerClaims {
  const claims: { -readonly [K in keyof HelperServerClaims]: HelperServerClaims[K] } = {};
  if (Array.isArray(raw['collectives'])) claims.collectives = stringListOf(raw['collectives']);
  if (typeof raw['ou'] === 'string') claims.ou = raw['ou'];
  const exp = raw['exp'];
  if (typeof exp === 'number') claims.exp = exp;
  else if (typeof exp === 'string') claims.exp = Number(exp);
  if (Array.isArray(raw['pub_subjects'])) claims.pub_subjects = stringListOf(raw['pub_subjects']);
  const perms = raw['permissions'];
  if (isObject(perms)) {
    const permissions: { -readonly [K in keyof HelperServerPermissions]: boolean } = {};
    for (const flag of PERMISSION_KEYS) {
      const value = perms[flag];
      if (typeof value === 'boolean') permissions[flag] = value;
    }
    claims.permissions = permissions;
  }
  return claims;
}

function stringMapOf(raw: Record<string, unknown>): Record<string, string> {
  // A null-prototype object: a helper-supplied key such as "__proto__" stays an ordinary key.
  const map: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(raw)) map[k] = typeof v === 'string' ? v : '';
  return map;
}

function stringListOf(raw: unknown[]): string[] {
  return raw.map((v) => (typeof v === 'string' ? v : ''));
}

// ---- error texts ----

/**
 * `detail`: names the offending values (`got number 8080`), for the log and `helper test`;
 * `public`: their kinds only (`got a number`), and keys of the helper's maps only when they look
 * like setting names, for the monitor port.
 */
type Wording = 'detail' | 'public';

function formatErrors(errors: readonly ErrorObject[], data: Record<string, unknown>, wording: Wording): string {
  const messages: string[] = [];
  for (const err of errors) {
    const message = formatError(err, data, wording);
    if (!messages.includes(message)) messages.push(message);
  }
  const shown = messages.slice(0, MAX_REPORTED_ERRORS).join('; ');
  const more = messages.length - MAX_REPORTED_ERRORS;
  return more > 0 ? `${shown}; and ${more} more` : shown;
}

function formatError(err: ErrorObject, data: Record<string, unknown>, wording: Wording): string {
  const segments = err.instancePath
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const { path, value } = locate(segments, data, wording);
  // the value of a key that looks secret is not shown in either wording
  const secret = segments.some((segment) => isSecretName(segment));
  const got =
    wording === 'public' ? describeKind(value) : secret ? `${kindName(value)} ${REDACTED}` : describeValue(value);
  return `${path} must be ${expectedOf(err)}, got ${got}`;
}

/** Renders a JSON pointer as `configuration["port"]`, `server_claims.collectives[0]`, … */
function locate(segments: readonly string[], data: unknown, wording: Wording): { path: string; value: unknown } {
  let path = '';
  let current: unknown = data;
  segments.forEach((segment, depth) => {
    if (Array.isArray(current)) {
      path += `[${segment}]`;
      current = current[Number(segment)];
      return;
    }
    const inStringMap = depth === 1 && (STRING_MAP_KEYS as readonly string[]).includes(segments[0] ?? '');
    const key = wording === 'detail' ? JSON.stringify(segment) : publicKeyName(segment);
    path += depth === 0 ? segment : inStringMap ? `[${key}]` : `.${segment}`;
    current = isObject(current) ? current[segment] : undefined;
  });
  return { path, value: current };
}

function expectedOf(err: ErrorObject): string {
  if (err.keyword === 'pattern') return 'a number'; // only `exp` has a pattern
  if (err.keyword !== 'type') return err.message ?? 'valid';
  const raw: unknown = (err.params as { type?: unknown }).type;
  const types = (typeof raw === 'string' ? raw.split(',') : Array.isArray(raw) ? raw.map(String) : []).filter(
    (t) => t !== 'null',
  );
  if (types.includes('number')) return 'a number';
  const [first] = types;
  switch (first) {
    case 'string':
      return 'a string';
    case 'boolean':
      return 'a boolean (true or false)';
    case 'object':
      return 'an object';
    case 'array':
      return 'an array of strings'; // the only arrays in a reply are string lists
    default:
      return types.join(' or ');
  }
}

/** `a number`, `a string`, `an array`, …: what a value is, without the value. */
export function describeKind(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  const kind = typeof value;
  return kind === 'object' ? 'an object' : `a ${kind}`;
}

/** `null`, `array`, `string`, …: the word describeValue starts with. */
function kindName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

/** `number 8080`, `string "abc"`, `array [1,2]`, … shortened for messages. */
export function describeValue(value: unknown): string {
  const kind = kindName(value);
  if (value === null || value === undefined) return kind;
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  if (text.length > 80) text = `${text.slice(0, 77)}...`;
  return `${kind} ${text}`;
}

import { Ajv, type ErrorObject } from 'ajv';
import { DurationError, parseDuration } from '../util/duration.js';
import { ANNOTATION_KEYWORDS, DURATION_FORMAT, type ObjectSchema, type PropertySchema } from './schema.js';
import { isPlainObject } from './key-matching.js';

export interface SchemaIssue {
  /** dotted key (`features.pki`), or `cert_deny_list[2]` for list items */
  readonly key: string;
  /** message without the file prefix, starting with the key */
  readonly message: string;
}

export interface SchemaValidationResult {
  /** the data with defaults applied; values that failed validation are replaced by their defaults */
  readonly data: Record<string, unknown>;
  readonly issues: readonly SchemaIssue[];
}

/**
 * Validates `input` against the schema, collecting every problem, and fills in defaults.
 * The validator is built per call: configuration is loaded rarely and an ajv instance is mutable
 * state that must not be shared between provisioners in one process.
 */
export function validateWithSchema(
  input: Readonly<Record<string, unknown>>,
  schema: ObjectSchema,
): SchemaValidationResult {
  const validate = createSchemaAjv().compile(schema);

  const data: Record<string, unknown> = structuredClone(input);
  if (validate(data)) return { data, issues: [] };

  const issues: SchemaIssue[] = [];
  const seen = new Set<string>();
  for (const error of validate.errors ?? []) {
    const issue = describeError(error, schema);
    const signature = `${issue.key}\u0000${issue.message}`;
    if (seen.has(signature)) continue;
    seen.add(signature);
    issues.push(issue);
    removeOffendingValue(data, error.instancePath, schema);
  }

  // Second pass puts defaults where bad values were removed, so later checks see typed data.
  if (!validate(data)) {
    const leftover = (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`).join('; ');
    throw new Error(`internal error: configuration still invalid after removing bad values: ${leftover}`);
  }
  return { data, issues };
}

/**
 * An ajv instance that knows our format and annotation keywords. Checking the schema against the
 * JSON Schema meta-schema and optimising the generated code cost about 15 times the rest of a
 * configuration load, so they are off unless asked for (the tests check the schema once).
 */
export function createSchemaAjv(opts: { checkSchema?: boolean } = {}): Ajv {
  const check = opts.checkSchema === true;
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: true,
    verbose: true,
    strict: true,
    validateSchema: check,
    code: { optimize: check },
  });
  for (const keyword of ANNOTATION_KEYWORDS) ajv.addKeyword(keyword);
  ajv.addFormat(DURATION_FORMAT, { type: 'string', validate: isDuration });
  return ajv;
}

function isDuration(text: string): boolean {
  try {
    parseDuration(text);
    return true;
  } catch {
    return false;
  }
}

/** JSON pointer segments of an ajv instancePath. */
function segments(instancePath: string): string[] {
  if (instancePath === '') return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** Walks the pointer as far as it names schema properties; returns the dotted key and list index. */
function locate(
  instancePath: string,
  schema: ObjectSchema,
): { key: string; path: string[]; index?: string; prop?: PropertySchema } {
  const path: string[] = [];
  let props: Readonly<Record<string, PropertySchema>> | undefined = schema.properties;
  let prop: PropertySchema | undefined;
  const segs = segments(instancePath);
  let i = 0;
  for (; i < segs.length; i++) {
    const seg = segs[i] ?? '';
    const next: PropertySchema | undefined = props?.[seg];
    if (next === undefined) break;
    path.push(seg);
    prop = next;
    props = next.properties;
  }
  const index = segs[i];
  const key = path.join('.');
  return index === undefined
    ? { key, path, ...(prop ? { prop } : {}) }
    : { key, path, index, ...(prop ? { prop } : {}) };
}

function removeOffendingValue(data: Record<string, unknown>, instancePath: string, schema: ObjectSchema): void {
  const { path } = locate(instancePath, schema);
  let target: unknown = data;
  for (const seg of path.slice(0, -1)) target = isPlainObject(target) ? target[seg] : undefined;
  const last = path[path.length - 1];
  if (isPlainObject(target) && last !== undefined) delete target[last];
}

function describeError(error: ErrorObject, schema: ObjectSchema): SchemaIssue {
  const where = locate(error.instancePath, schema);
  const key = where.index === undefined ? where.key : `${where.key}[${where.index}]`;
  const secret = where.prop?.['x-secret'] === true;
  const value: unknown = error.data;
  const shown = secret ? '(value hidden)' : show(value);
  const params = error.params as Record<string, unknown>;

  switch (error.keyword) {
    case 'type': {
      const expected = String(params['type']);
      return {
        key,
        message:
          `${key} must be ${withArticle(expected)}, ` +
          `got ${secret ? withArticle(kindOf(value)) : describeValue(value)}${typeHint(expected, value)}`,
      };
    }
    case 'enum':
      return { key, message: `${key} ${shown} is not one of ${(error.schema as readonly string[]).join(', ')}` };
    case 'minimum':
      return { key, message: `${key} ${shown} is below the minimum of ${String(params['limit'])}` };
    case 'maximum':
      return { key, message: `${key} ${shown} is above the maximum of ${String(params['limit'])}` };
    case 'pattern': {
      const hint = where.prop?.['x-pattern-hint'] ?? `must match ${String(params['pattern'])}`;
      return { key, message: `${key} ${shown} ${hint}` };
    }
    case 'format':
      return { key, message: `${key} ${shown} is not a valid duration: ${durationReason(value)}` };
    default:
      return { key, message: `${key} ${error.message ?? 'is invalid'}` };
  }
}

function durationReason(value: unknown): string {
  try {
    parseDuration(String(value));
    return 'unknown reason';
  } catch (err) {
    return err instanceof DurationError ? err.message : String(err);
  }
}

function withArticle(type: string): string {
  switch (type) {
    case 'integer':
      return 'an integer';
    case 'object':
      return 'a mapping';
    case 'array':
      return 'a list';
    default:
      return `a ${type}`;
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function describeValue(value: unknown): string {
  if (typeof value === 'string') return `the string ${JSON.stringify(value)}`;
  if (typeof value === 'number') return `the number ${String(value)}`;
  if (typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return 'a list';
  if (isPlainObject(value)) return 'a mapping';
  return String(value);
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
}

/** A hint for the common YAML slip of quoting numbers/booleans or not quoting strings. */
function typeHint(expected: string, value: unknown): string {
  if (typeof value === 'string') {
    if (expected === 'integer' && /^[+-]?\d+$/.test(value.trim())) return ' (remove the quotes)';
    if (expected === 'boolean' && /^(true|false)$/i.test(value.trim())) return ' (remove the quotes)';
  }
  if (expected === 'string' && (typeof value === 'number' || typeof value === 'boolean')) {
    return ' (put the value in quotes)';
  }
  return '';
}

// Typed claim decoding with Go encoding/json semantics.
//
// Upstream decodes token payloads and the helper's `server_claims` into Go structs: a value of the
// wrong JSON type for a known field fails the whole decode, `null` leaves the zero value, unknown
// keys are ignored and keys match field names case-insensitively. JSON Schema could express the
// types but not the null/zero-value, numeric-string and case-folding rules, hence this decoder.
import { isPlainObject } from '../../util/values.js';
import { ProvisionerError } from '../../util/errors.js';

export { isPlainObject };

/** Flags of a server token's `permissions` claim, in Go's field order. */
export interface ServerPermissions {
  submission?: boolean;
  streams?: boolean;
  governor?: boolean;
  service_host?: boolean;
}

interface KindTypes {
  string: string;
  bool: boolean;
  /** Go jwt.NumericDate: Unix seconds, fractions allowed. */
  numericDate: number;
  /** Go jwt.ClaimStrings: a string or an array of strings. */
  claimStrings: string[];
  /** A free-form JSON object (Go map[string]interface{}). */
  map: Record<string, unknown>;
  stringArray: string[];
  permissions: ServerPermissions;
}

export type FieldKind = keyof KindTypes;
export type StructSpec = Readonly<Record<string, FieldKind>>;
/** Decoded fields: present when the input held a non-null value for them. */
export type Decoded<S extends StructSpec> = { -readonly [K in keyof S]?: KindTypes[S[K]] };

const GO_TYPE_NAMES: Readonly<Record<FieldKind, string>> = {
  string: 'string',
  bool: 'bool',
  numericDate: 'jwt.NumericDate',
  claimStrings: 'jwt.ClaimStrings',
  map: 'tokens.MapClaims',
  stringArray: '[]string',
  permissions: 'tokens.ServerPermissions',
};

const PERMISSION_SPEC = {
  submission: 'bool',
  streams: 'bool',
  governor: 'bool',
  service_host: 'bool',
} as const satisfies StructSpec;

// Go's json.Number grammar.
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** Thrown for any decoding failure; the message follows Go's wording. */
export class GoDecodeError extends ProvisionerError {}

/**
 * Decodes `value` (already JSON-parsed) into the fields of `spec` the way Go's encoding/json fills a
 * struct named `structName`; throws {@link GoDecodeError} on a type mismatch.
 */
export function decodeGoStruct<S extends StructSpec>(structName: string, spec: S, value: unknown): Decoded<S> {
  const out: Record<string, unknown> = {};
  if (value === null) return out as Decoded<S>;
  if (!isPlainObject(value)) {
    throw new GoDecodeError(`json: cannot unmarshal ${jsonTypeName(value)} into Go value of type ${structName}`);
  }

  const folded = new Map<string, string>();
  for (const name of Object.keys(spec)) folded.set(name.toLowerCase(), name);

  for (const [key, item] of Object.entries(value)) {
    const field = Object.hasOwn(spec, key) ? key : folded.get(key.toLowerCase());
    if (field === undefined) continue;
    const kind = spec[field];
    if (kind === undefined || item === null) continue; // null keeps the zero value
    out[field] = decodeField(`${structName}.${field}`, kind, item);
  }
  return out as Decoded<S>;
}

function decodeField(path: string, kind: FieldKind, item: unknown): unknown {
  switch (kind) {
    case 'string':
      if (typeof item !== 'string') throw typeError(item, path, kind);
      return item;
    case 'bool':
      if (typeof item !== 'boolean') throw typeError(item, path, kind);
      return item;
    case 'numericDate':
      return decodeNumericDate(item);
    case 'claimStrings':
      return decodeClaimStrings(item);
    case 'map':
      if (!isPlainObject(item)) throw typeError(item, path, kind);
      return item;
    case 'stringArray':
      if (!Array.isArray(item)) throw typeError(item, path, kind);
      return item.map((element: unknown) => {
        if (element === null) return '';
        if (typeof element !== 'string') throw typeError(element, path, 'string');
        return element;
      });
    case 'permissions': {
      if (!isPlainObject(item)) throw typeError(item, path, kind);
      return decodeGoStruct('ServerPermissions', PERMISSION_SPEC, item);
    }
  }
}

function decodeNumericDate(item: unknown): number {
  if (typeof item === 'number') return item;
  if (typeof item === 'string') {
    if (!JSON_NUMBER.test(item)) {
      throw new GoDecodeError(
        `could not parse NumericData: json: ` +
          `invalid number literal, trying to unmarshal ${JSON.stringify(JSON.stringify(item))} into Number`,
      );
    }
    return Number(item);
  }
  throw new GoDecodeError(
    `could not parse NumericData: json: cannot unmarshal ${jsonTypeName(item)} into Go value of type json.Number`,
  );
}

function decodeClaimStrings(item: unknown): string[] {
  if (typeof item === 'string') return [item];
  if (Array.isArray(item) && item.every((element): element is string => typeof element === 'string')) return [...item];
  throw new GoDecodeError('invalid type for claim');
}

function typeError(item: unknown, path: string, kind: FieldKind): GoDecodeError {
  return new GoDecodeError(
    `json: cannot unmarshal ${jsonTypeName(item)} into Go struct field ${path} of type ${GO_TYPE_NAMES[kind]}`,
  );
}

function jsonTypeName(item: unknown): string {
  if (Array.isArray(item)) return 'array';
  if (typeof item === 'boolean') return 'bool';
  if (typeof item === 'number') return 'number';
  if (typeof item === 'string') return 'string';
  return 'object';
}

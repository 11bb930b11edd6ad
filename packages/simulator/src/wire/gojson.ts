// Go encoding/json behaviour that the simulator must reproduce and that JSON.parse cannot:
// * Go decodes an `int` field from the literal number text, so `1.0`, `1e2` and `1.5` are type
//   errors although JSON.parse turns the first two into integers; we need the raw literal.
// * Go matches struct field names case-insensitively and reports type errors with its own texts,
//   which the server returns to the client as `Could not parse request data for ...: <error>`.
// * Go's encoder escapes <, >, &, U+2028 and U+2029 inside strings.
// JSON.parse's reviver sees a number's source text (Node 22 and later), but neither Go's field
// matching nor its error texts, hence this small parser.

export type JValue =
  | { t: 'null' }
  | { t: 'bool'; v: boolean }
  | { t: 'num'; raw: string }
  | { t: 'str'; v: string }
  | { t: 'arr'; v: JValue[] }
  | { t: 'obj'; v: Array<[string, JValue]> };

export class GoJsonSyntaxError extends Error {}

function quoteChar(c: string): string {
  switch (c) {
    case "'":
      return "'\\''";
    case '\n':
      return "'\\n'";
    case '\r':
      return "'\\r'";
    case '\t':
      return "'\\t'";
    default:
      return `'${c}'`;
  }
}

class Parser {
  pos = 0;
  // sticky expressions carry lastIndex, so each parser owns its own
  private readonly numberRe = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  private readonly wsRe = /[ \t\r\n]*/y;

  constructor(private readonly s: string) {}

  fail(context: string): never {
    if (this.pos >= this.s.length) throw new GoJsonSyntaxError('unexpected end of JSON input');
    throw new GoJsonSyntaxError(`invalid character ${quoteChar(this.s.charAt(this.pos))} ${context}`);
  }

  ws(): void {
    this.wsRe.lastIndex = this.pos;
    this.wsRe.exec(this.s);
    this.pos = this.wsRe.lastIndex;
  }

  value(): JValue {
    this.ws();
    const c = this.s.charAt(this.pos);
    switch (c) {
      case '{':
        return this.object();
      case '[':
        return this.array();
      case '"':
        return { t: 'str', v: this.string() };
      case 't':
        this.literal('true');
        return { t: 'bool', v: true };
      case 'f':
        this.literal('false');
        return { t: 'bool', v: false };
      case 'n':
        this.literal('null');
        return { t: 'null' };
      default:
        if (c === '-' || (c >= '0' && c <= '9')) return this.number();
        return this.fail('looking for beginning of value');
    }
  }

  literal(word: string): void {
    for (let i = 0; i < word.length; i++) {
      if (this.s.charAt(this.pos) !== word.charAt(i)) {
        this.fail(`in literal ${word} (expecting ${quoteChar(word.charAt(i))})`);
      }
      this.pos++;
    }
  }

  number(): JValue {
    this.numberRe.lastIndex = this.pos;
    const m = this.numberRe.exec(this.s);
    if (m === null || m[0] === '-') {
      this.pos++;
      return this.fail('in numeric literal');
    }
    this.pos += m[0].length;
    return { t: 'num', raw: m[0] };
  }

  string(): string {
    this.pos++; // opening quote
    let out = '';
    for (;;) {
      if (this.pos >= this.s.length) this.fail('');
      const c = this.s.charAt(this.pos);
      if (c === '"') {
        this.pos++;
        return out;
      }
      if (c < ' ') this.fail('in string literal');
      if (c !== '\\') {
        out += c;
        this.pos++;
        continue;
      }
      const e = this.s.charAt(this.pos + 1);
      this.pos += 2;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          const hex = this.s.slice(this.pos, this.pos + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.fail('in \\u hexadecimal character escape');
          out += String.fromCharCode(parseInt(hex, 16));
          this.pos += 4;
          break;
        }
        default:
          this.pos--;
          this.fail('in string escape code');
      }
    }
  }

  object(): JValue {
    this.pos++;
    const entries: Array<[string, JValue]> = [];
    this.ws();
    if (this.s.charAt(this.pos) === '}') {
      this.pos++;
      return { t: 'obj', v: entries };
    }
    for (;;) {
      this.ws();
      if (this.s.charAt(this.pos) !== '"') this.fail('looking for beginning of object key string');
      const key = this.string();
      this.ws();
      if (this.s.charAt(this.pos) !== ':') this.fail('after object key');
      this.pos++;
      entries.push([key, this.value()]);
      this.ws();
      const c = this.s.charAt(this.pos);
      if (c === ',') {
        this.pos++;
        continue;
      }
      if (c === '}') {
        this.pos++;
        return { t: 'obj', v: entries };
      }
      this.fail('after object key:value pair');
    }
  }

  array(): JValue {
    this.pos++;
    const items: JValue[] = [];
    this.ws();
    if (this.s.charAt(this.pos) === ']') {
      this.pos++;
      return { t: 'arr', v: items };
    }
    for (;;) {
      items.push(this.value());
      this.ws();
      const c = this.s.charAt(this.pos);
      if (c === ',') {
        this.pos++;
        continue;
      }
      if (c === ']') {
        this.pos++;
        return { t: 'arr', v: items };
      }
      this.fail('after array element');
    }
  }
}

/** Parses JSON keeping number literals as text; throws GoJsonSyntaxError with Go's wording. */
export function parseGoJson(text: string): JValue {
  const p = new Parser(text);
  p.ws();
  if (p.pos >= text.length) throw new GoJsonSyntaxError('unexpected end of JSON input');
  const v = p.value();
  p.ws();
  if (p.pos < text.length) p.fail('after top-level value');
  return v;
}

/** Go's name for a JSON value kind in UnmarshalTypeError messages. */
export function goKindName(v: JValue): string {
  switch (v.t) {
    case 'null':
      return 'null';
    case 'bool':
      return 'bool';
    case 'num':
      return 'number';
    case 'str':
      return 'string';
    case 'arr':
      return 'array';
    case 'obj':
      return 'object';
  }
}

/** Converts a JValue to plain JavaScript (numbers become JS numbers). */
export function toPlain(v: JValue): unknown {
  switch (v.t) {
    case 'null':
      return null;
    case 'bool':
    case 'str':
      return v.v;
    case 'num':
      return Number(v.raw);
    case 'arr':
      return v.v.map(toPlain);
    case 'obj': {
      const o: Record<string, unknown> = {};
      for (const [k, x] of v.v) o[k] = toPlain(x);
      return o;
    }
  }
}

export type GoFieldType = 'string' | 'int' | 'map[string]string';

export interface GoStructSpec {
  /** Go type name with package, e.g. `provision.RestartRequest` */
  readonly typeName: string;
  /** JSON field name -> Go type */
  readonly fields: Readonly<Record<string, GoFieldType>>;
}

export type GoFieldValue = string | number | Record<string, string>;

export type GoDecodeResult =
  { ok: true; value: Record<string, GoFieldValue | undefined> } | { ok: false; error: string };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function findField(spec: GoStructSpec, key: string): string | undefined {
  if (Object.hasOwn(spec.fields, key)) return key;
  const lower = key.toLowerCase();
  return Object.keys(spec.fields).find((f) => f.toLowerCase() === lower);
}

/**
 * Decodes a JSON value into a Go struct described by spec, like json.Unmarshal: unknown keys are
 * ignored, keys match case-insensitively, null leaves the zero value, and the first type error is
 * reported with Go's message (decoding continues after it, as Go does, but only the first counts).
 */
export function decodeGoStruct(spec: GoStructSpec, input: JValue): GoDecodeResult {
  const shortName = spec.typeName.slice(spec.typeName.lastIndexOf('.') + 1);
  if (input.t === 'null') return { ok: true, value: {} };
  if (input.t !== 'obj') {
    return { ok: false, error: `json: cannot unmarshal ${goKindName(input)} into Go value of type ${spec.typeName}` };
  }
  const out: Record<string, GoFieldValue | undefined> = {};
  let firstError: string | undefined;
  const typeError = (what: string, field: string, type: string): void => {
    firstError ??= `json: cannot unmarshal ${what} into Go struct field ${shortName}.${field} of type ${type}`;
  };
  for (const [key, value] of input.v) {
    const field = findField(spec, key);
    if (field === undefined || value.t === 'null') continue;
    const type = spec.fields[field];
    if (type === 'string') {
      if (value.t === 'str') out[field] = value.v;
      else typeError(goKindName(value), field, 'string');
    } else if (type === 'int') {
      if (value.t !== 'num') {
        typeError(goKindName(value), field, 'int');
      } else if (!/^-?\d+$/.test(value.raw) || BigInt(value.raw) < INT64_MIN || BigInt(value.raw) > INT64_MAX) {
        typeError(`number ${value.raw}`, field, 'int');
      } else {
        out[field] = Number(value.raw);
      }
    } else if (type === 'map[string]string') {
      if (value.t !== 'obj') {
        typeError(goKindName(value), field, 'map[string]string');
        continue;
      }
      const m: Record<string, string> = {};
      for (const [k, v] of value.v) {
        if (v.t === 'str') m[k] = v.v;
        else if (v.t === 'null') m[k] = '';
        else typeError(goKindName(v), field, 'string');
      }
      out[field] = m;
    }
  }
  if (firstError !== undefined) return { ok: false, error: firstError };
  return { ok: true, value: out };
}

/**
 * Decodes a JSON text into Go's map[string]string (configure's `config`), returning Go's error text.
 */
export function decodeGoStringMap(
  text: string,
): { ok: true; value: Record<string, string> } | { ok: false; error: string } {
  let v: JValue;
  try {
    v = parseGoJson(text);
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
  if (v.t === 'null') return { ok: true, value: {} };
  if (v.t !== 'obj')
    return { ok: false, error: `json: cannot unmarshal ${goKindName(v)} into Go value of type map[string]string` };
  const out: Record<string, string> = {};
  let firstError: string | undefined;
  for (const [k, x] of v.v) {
    if (x.t === 'str') out[k] = x.v;
    else if (x.t === 'null') out[k] = '';
    else firstError ??= `json: cannot unmarshal ${goKindName(x)} into Go value of type string`;
  }
  if (firstError !== undefined) return { ok: false, error: firstError };
  return { ok: true, value: out };
}

const GO_ESCAPES = /[<>&\u2028\u2029]/g;
const GO_ESCAPE_MAP: Readonly<Record<string, string>> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/**
 * JSON.stringify, then Go's HTML-safe escaping. The replaced characters can only occur inside JSON
 * strings, so a textual replacement is exact.
 */
export function goJsonStringify(value: unknown): string {
  return JSON.stringify(value).replace(GO_ESCAPES, (c) => GO_ESCAPE_MAP[c] ?? c);
}

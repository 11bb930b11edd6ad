// JSON text the way Go's encoding/json writes it, for byte-exact tokens (security.md §4.3):
// `<`, `>`, `&`, U+2028 and U+2029 are escaped as \u003c…; JSON.stringify does not do that.
// Objects are written in insertion order (callers build them in Go's struct field order).

export type GoJsonValue = null | boolean | number | string | readonly GoJsonValue[] | { readonly [key: string]: GoJsonValue };

const SHORT_ESCAPES: Readonly<Record<string, string>> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Go encoding/json output for a string. */
export function goJsonString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const short = SHORT_ESCAPES[ch];
    if (short !== undefined) {
      out += short;
      continue;
    }
    const code = ch.codePointAt(0) ?? 0;
    if (code < 0x20 || ch === '<' || ch === '>' || ch === '&' || code === 0x2028 || code === 0x2029) {
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      out += '\\ufffd'; // a lone surrogate is invalid UTF-8 to Go, which writes the replacement character
    } else {
      out += ch;
    }
  }
  return `${out}"`;
}

/** Go encoding/json output for a value built from plain objects, arrays and primitives. */
export function goJsonStringify(value: GoJsonValue): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`cannot encode ${value} as JSON`);
    return JSON.stringify(value);
  }
  if (typeof value === 'string') return goJsonString(value);
  if (isArray(value)) return `[${value.map((item) => goJsonStringify(item)).join(',')}]`;
  const members = Object.entries(value).map(([key, item]) => `${goJsonString(key)}:${goJsonStringify(item)}`);
  return `{${members.join(',')}}`;
}

function isArray(value: GoJsonValue): value is readonly GoJsonValue[] {
  return Array.isArray(value);
}

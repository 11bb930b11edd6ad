// JSON text as Go's encoding/json writes it, for bytes that must match the Go provisioner's: the
// helper request (helpers that grep the raw text, captured requests replayed byte for byte) and
// minted server tokens. Go differs from JSON.stringify only in escaping `<`,
// `>`, `&` (HTML-safe output) and U+2028/U+2029 as `\u003c`-style escapes; since Go 1.22 both use
// the short `\b`/`\f` escapes and write other control characters as lower-case `\u00XX`. Objects
// keep insertion order, so callers build them in Go's struct field order.

export type GoJsonValue =
  null | boolean | number | string | readonly GoJsonValue[] | { readonly [key: string]: GoJsonValue };

const GO_ESCAPES: Readonly<Record<string, string>> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

// Outside string literals JSON text only holds punctuation, digits and literals, so these
// characters can only occur inside strings and a textual replacement is exact.
const GO_ESCAPED_CHARS = /[<>&\u2028\u2029]/g;

// A JS string may hold unpaired surrogates, which Go strings (UTF-8) cannot: Go's decoder already
// turned them into U+FFFD when the value was read, and that rune is what it writes back.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Compact JSON (no indentation, no trailing newline) with Go's escaping, of plain objects, arrays and primitives. */
export function goJsonStringify(value: GoJsonValue | object): string {
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'string') return v.replace(LONE_SURROGATE, '\uFFFD');
    // JSON.stringify would write `null`; Go's Marshal refuses these
    if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError(`cannot encode ${v} as JSON`);
    return v;
  });
  return text.replace(GO_ESCAPED_CHARS, (ch) => GO_ESCAPES[ch] ?? ch);
}

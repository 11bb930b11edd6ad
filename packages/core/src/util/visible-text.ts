// How text from outside is shown: every character that could act on a terminal or a log reader
// instead of being read (C0 and C1 controls, DEL, line and paragraph separators, bidirectional
// marks and overrides, the byte-order mark, lone surrogates) and every character a reader cannot
// see (format characters, Unicode category Cf, and the other default-ignorable code points: a
// zero-width space or a tag character would let another name read as `web1.example.net`) is
// written as a visible `\uXXXX` escape (a code point beyond U+FFFF as its two surrogates, each
// escaped). The text log, the JSON log, the monitor port's JSON (and so the status page) and the
// command line all show text through this one function, which also cuts what it shows to a fixed
// length (SHOWN_TEXT_MAX unless the caller shows trusted text in full): a node's 600,000-character
// status message must not become a 600 KB log line. It never touches a backslash, so applying it
// twice to a text shorter than the cut changes nothing.

// With the u flag a character class matches a surrogate only when it stands alone (not in a pair).
const RANGES = [
  '\\u0000-\\u001f\\u007f-\\u009f', // C0, DEL, C1
  '\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069', // bidirectional marks, embeddings, overrides, isolates
  '\\u2028\\u2029\\ufeff', // line and paragraph separators, byte-order mark
  '\\ud800-\\udfff', // lone surrogates
  '\\p{Cf}\\p{Default_Ignorable_Code_Point}', // format characters and what else is drawn as nothing
];
const UNSAFE = new RegExp(`[${RANGES.join('')}]`, 'u');
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'gu');

const escapeUnit = (unit: number): string => `\\u${unit.toString(16).padStart(4, '0')}`;
const escape = (c: string): string =>
  c.length === 1 ? escapeUnit(c.charCodeAt(0)) : escapeUnit(c.charCodeAt(0)) + escapeUnit(c.charCodeAt(1));

/** Characters of one text shown (escapes counted): a longer one is cut and says how long it was. */
export const SHOWN_TEXT_MAX = 2_000;

/** An escape cut in the middle, at the end of a cut text. */
const PARTIAL_ESCAPE = /\\(u[0-9a-f]{0,3})?$/;

/**
 * `text` with every character that is not for reading written as `\uXXXX`, cut to `max`
 * characters (then followed by `… (N characters)`, N the length of `text`).
 */
export function visibleText(text: string, max = SHOWN_TEXT_MAX): string {
  const head = text.length > max ? text.slice(0, max) : text;
  let shown = UNSAFE.test(head) ? head.replace(UNSAFE_ALL, escape) : head;
  if (shown.length <= max && head === text) return shown;
  if (shown.length > max) shown = shown.slice(0, max).replace(PARTIAL_ESCAPE, '');
  return `${shown}… (${text.length} characters)`;
}

/**
 * A copy of a JSON-like value with every string in it (keys too) made visible and cut to
 * `maxText`; other values are kept. Nesting deeper than `maxDepth` is cut to `"[…]"`: what is
 * shown needs no more.
 */
export function visibleStrings(value: unknown, maxDepth = 32, maxText = SHOWN_TEXT_MAX): unknown {
  if (typeof value === 'string') return visibleText(value, maxText);
  if (value === null || typeof value !== 'object') return value;
  if (maxDepth <= 0) return '[…]';
  if (Array.isArray(value)) return value.map((v) => visibleStrings(v, maxDepth - 1, maxText));
  const out: Record<string, unknown> = {};
  // defined, not assigned: a key `__proto__` stays a key
  for (const [k, v] of Object.entries(value)) {
    const shown = visibleStrings(v, maxDepth - 1, maxText);
    const key = visibleText(k, maxText);
    Object.defineProperty(out, key, { value: shown, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

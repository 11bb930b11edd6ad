// How text from outside is shown: every character that could act on a terminal or a log reader
// instead of being read (C0 and C1 controls, DEL, line and paragraph separators, bidirectional
// marks and overrides, the byte-order mark, lone surrogates) is written as a visible `\uXXXX`
// escape. The text log, the JSON log, the monitor port's JSON (and so the status page) and the
// command line all show text through this one function. It never touches a backslash, so applying
// it twice changes nothing.

// With the u flag a character class matches a surrogate only when it stands alone (not in a pair).
const RANGES = [
  '\\u0000-\\u001f\\u007f-\\u009f', // C0, DEL, C1
  '\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069', // bidirectional marks, embeddings, overrides, isolates
  '\\u2028\\u2029\\ufeff', // line and paragraph separators, byte-order mark
  '\\ud800-\\udfff', // lone surrogates
];
const UNSAFE = new RegExp(`[${RANGES.join('')}]`, 'u');
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'gu');

const escape = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `text` with every character that is not for reading written as `\uXXXX`. */
export function visibleText(text: string): string {
  return UNSAFE.test(text) ? text.replace(UNSAFE_ALL, escape) : text;
}

/**
 * A copy of a JSON-like value with every string in it (keys too) made visible; other values are
 * kept. Nesting deeper than `maxDepth` is cut to `"[…]"`: what is shown needs no more.
 */
export function visibleStrings(value: unknown, maxDepth = 32): unknown {
  if (typeof value === 'string') return visibleText(value);
  if (value === null || typeof value !== 'object') return value;
  if (maxDepth <= 0) return '[…]';
  if (Array.isArray(value)) return value.map((v) => visibleStrings(v, maxDepth - 1));
  const out: Record<string, unknown> = {};
  // defined, not assigned: a key `__proto__` stays a key
  for (const [k, v] of Object.entries(value)) {
    const shown = visibleStrings(v, maxDepth - 1);
    Object.defineProperty(out, visibleText(k), { value: shown, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

// How text from outside is shown: every character that could act on a terminal or a log reader
// instead of being read (C0 and C1 controls, DEL, line and paragraph separators, bidirectional
// overrides, lone surrogates) is written as a visible `\uXXXX` escape. The text log, the JSON log,
// the monitor port's JSON (and so the status page) and the command line all show text through
// this one function. It never touches a backslash, so applying it twice changes nothing.

// With the u flag a character class matches a surrogate only when it stands alone (not in a pair).
// eslint-disable-next-line no-control-regex -- control characters are what this finds
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]/u;
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
    Object.defineProperty(out, visibleText(k), { value: visibleStrings(v, maxDepth - 1), enumerable: true, writable: true, configurable: true });
  }
  return out;
}

// Serialises the helper request exactly as the Go provisioner's `json.Marshal(host)` does, so a
// helper sees the same bytes from either implementation: captured requests can be replayed and
// compared byte for byte, and helpers that pick values out of the raw text (sed/grep in shell
// helpers) keep matching. Go differs from JSON.stringify only in escaping `<`, `>` and `&`
// (HTML-safe output) and U+2028/U+2029 (JavaScript line terminators) as `\u003c`-style escapes;
// since Go 1.22 both use the short `\b`/`\f` escapes, and both write `\u00XX` in lower case.
import type { HelperRequest } from './types.js';

const GO_ESCAPES: Readonly<Record<string, string>> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

// Outside string literals JSON text only contains punctuation, digits and literals, so these
// characters can only occur inside strings and a textual replacement is exact.
const GO_ESCAPED_CHARS = /[<>&\u2028\u2029]/g;

// A JS string may hold unpaired surrogates, which Go strings (UTF-8) cannot; Go would have
// replaced them with U+FFFD when the data was decoded.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** JSON.stringify with Go `encoding/json` string escaping (no indentation, no trailing newline). */
export function goJsonStringify(value: unknown): string {
  const text = JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'string' ? v.replace(LONE_SURROGATE, '\uFFFD') : v,
  );
  if (text === undefined) throw new TypeError('value cannot be encoded as JSON');
  return text.replace(GO_ESCAPED_CHARS, (ch) => GO_ESCAPES[ch] ?? ch);
}

/**
 * The request document for the helper's stdin: always the five keys in Go struct order
 * (identity, csr, ed25519_pubkey, inventory, jwt), `null` for disabled features, the inventory
 * as a JSON string. The result contains no raw newline, so it is also a valid JSON-lines record.
 */
export function encodeHelperRequest(req: HelperRequest): string {
  const ordered = {
    identity: req.identity,
    csr: req.csr ? { csr: req.csr.csr, public_key: req.csr.public_key, ssldir: req.csr.ssldir } : null,
    ed25519_pubkey: req.ed25519_pubkey
      ? {
          public_key: req.ed25519_pubkey.public_key,
          directory: req.ed25519_pubkey.directory,
          signature: req.ed25519_pubkey.signature,
        }
      : null,
    inventory: req.inventory,
    jwt: req.jwt ?? null,
  };
  return goJsonStringify(ordered);
}

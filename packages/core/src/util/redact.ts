// The one redactor of the provisioner: every path that quotes text the provisioner did not write
// itself (a helper's stdout and stderr, a node's reply, a request echoed back) passes it through
// here before the text reaches an error message or a log line. It works on free text and on
// JSON, also broken or cut-short JSON and JSON inside a JSON string, and blanks:
//
// - the exact values it was given (the provisioning token, the broker password, the secret values
//   a helper returned), also as they appear inside JSON strings;
// - PEM blocks (private keys, certificates, NATS credentials), cut short or JSON-escaped too;
// - JWTs and NATS nkey seeds, by their shape;
// - the password of a URL (`nats://user:password@host`);
// - the value of every key whose name looks secret (password, passwd, secret, token, seed, key,
//   credential, jwt, …): `"key": "value"`, `key=value`, `key: value`, `'key' => 'value'`, at any
//   depth of JSON escaping. The name stays, the value goes: `"password":"[redacted]"`.
//
// `redactSecrets` is the whole pass for foreign text. `maskKnownSecrets` applies only the exact
// values and the shapes, which never match ordinary product wording: it is safe on any text,
// including messages the provisioner wrote itself.

/** What a blanked value becomes. */
export const REDACTED = '[redacted]';

/** Exact values shorter than this are not masked: too likely to match ordinary text. */
export const MIN_SECRET_LENGTH = 6;

/** Words that make a key name secret, matched as whole words of the name. */
const SECRET_WORDS: ReadonlySet<string> = new Set([
  'password',
  'passwd',
  'pass',
  'pwd',
  'passphrase',
  'secret',
  'secrets',
  'token',
  'tokens',
  'seed',
  'seeds',
  'key',
  'keys',
  'privkey',
  'privatekey',
  'apikey',
  'credential',
  'credentials',
  'creds',
  'jwt',
  'authorization',
  'cookie',
  // the provisioning JWT's claims that hold the token and the broker password
  'cht',
  'chpwd',
]);

/** Parts of a key name that make it secret wherever they appear (`clientpassword`, `x-auth-token`). */
const SECRET_PARTS: readonly string[] = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'token',
  'credential',
  'privatekey',
  'apikey',
  'jwt',
];

/** A name ending in one of these names where a secret is kept, not the secret (`seed_file`). */
const LOCATION_WORDS: ReadonlySet<string> = new Set(['file', 'files', 'path', 'dir', 'directory']);

/** Words that say the value is public (`public_key`, `ecdh_public`). */
const PUBLIC_WORDS: ReadonlySet<string> = new Set(['public', 'pub', 'pubkey']);

/**
 * The configuration keys of go-choria whose values are secrets (its `*_file` keys name where a
 * secret is kept, not the secret). The word rules above cover them all; they are listed so that a
 * change to the rules that would let one through fails the redactor's tests.
 */
export const CHORIA_SECRET_KEYS: readonly string[] = [
  'plugin.nats.pass',
  'plugin.choria.network.peer_password',
  'plugin.choria.network.provisioning.client_password',
  'plugin.choria.network.system.password',
];

/** Whether `name` (a JSON key, an environment variable, a header, a setting) names a secret value. */
export function isSecretName(name: string): boolean {
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== '');
  const last = words[words.length - 1];
  if (last === undefined || LOCATION_WORDS.has(last)) return false;
  if (words.some((w) => PUBLIC_WORDS.has(w))) return false;
  if (words.some((w) => SECRET_WORDS.has(w))) return true;
  const joined = words.join('');
  return SECRET_PARTS.some((p) => joined.includes(p));
}

// ---- shapes ----

/** A PEM block (private key, certificate, NATS credentials), also JSON-escaped or cut short. */
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]{1,60})-----[\s\S]*?(?:-----END \1-----|$)/g;
/** A JWT: a base64url JSON header (`{"` is `eyJ`), a payload and a signature. */
const JWT = /\beyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*/g;
/** A NATS nkey seed: S, the key type, 56 base32 characters. */
const NKEY_SEED = /\bS[ACNOPUX][A-Z2-7]{56}\b/g;
/** The password of a URL's user information. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]{0,30}:\/\/[^\s:/@"'<>\\]{0,200}:)([^\s/@"'<>\\]{1,200})@/gi;

function maskShapes(text: string): string {
  let out = text;
  if (out.includes('-----BEGIN ')) out = out.replace(PEM_BLOCK, REDACTED);
  if (out.includes('eyJ')) out = out.replace(JWT, REDACTED);
  if (out.includes('://')) out = out.replace(URL_PASSWORD, `$1${REDACTED}@`);
  NKEY_SEED.lastIndex = 0;
  if (/S[ACNOPUX][A-Z2-7]{56}/.test(out)) out = out.replace(NKEY_SEED, REDACTED);
  return out;
}

// ---- keys and values ----

/** A quoted key and its separator: groups 1 to 3 of KEY_AND_SEPARATOR. */
const QUOTED_KEY_AND_SEPARATOR = /(\\*)(["'])([^"'\\\r\n]{1,200}?)\1\2[ \t]*(?:=>|:=|[:=])[ \t]*/;
/** A bare key and its separator (the `:` of `://` is none): group 4 of KEY_AND_SEPARATOR. */
const BARE_KEY_AND_SEPARATOR = /(?<![\w.$-])([A-Za-z_$][\w.$-]{0,199})[ \t]*(?:=>|:=|=|:(?!\/\/))[ \t]*/;
/**
 * A key and its separator: a quoted key (with any depth of backslash escaping, the same before
 * both quotes) or a bare one, then `:`, `=`, `:=` or `=>`. The value is read by `valueEnd`.
 */
const KEY_AND_SEPARATOR = new RegExp(`${QUOTED_KEY_AND_SEPARATOR.source}|${BARE_KEY_AND_SEPARATOR.source}`, 'g');

/** Authorization schemes: the credentials follow the scheme's name. */
const AUTH_SCHEME = /^(?:Bearer|Basic|Token|Digest|Negotiate)[ \t]+/i;
/** An unquoted value: up to white space or punctuation that ends a value in JSON, YAML, shells and URLs. */
const BARE_VALUE = /^[^\s,;&"'<>(){}[\]\\]+/;

/** Counts the backslashes right before `at`. */
function backslashesBefore(text: string, at: number): number {
  let n = 0;
  while (at - 1 - n >= 0 && text.charCodeAt(at - 1 - n) === 0x5c) n++;
  return n;
}

/**
 * The span of the value that starts at `from`, or undefined when there is nothing to blank
 * (an empty string or list, an object whose own keys are looked at one by one).
 */
function valueSpan(text: string, from: number): [number, number] | undefined {
  if (text.startsWith(REDACTED, from)) return undefined;
  const rest = text.slice(from, from + 16);
  const quoted = /^(\\*)(["'])/.exec(rest);
  if (quoted !== null) {
    const escapes = (quoted[1] ?? '').length;
    const quote = quoted[2] as string;
    const start = from + quoted[0].length;
    let at = text.indexOf(quote, start);
    while (at >= 0) {
      const before = backslashesBefore(text, at);
      // unescaped text: any even number of backslashes before the quote leaves it a quote;
      // escaped text: exactly as many as before the opening one (an escaped quote inside has more)
      const closes = escapes === 0 ? before % 2 === 0 : before === escapes;
      if (closes) break;
      at = text.indexOf(quote, at + 1);
    }
    // no closing quote (cut short, broken): everything to the end of the line goes
    let end = at >= 0 ? at - escapes : text.indexOf('\n', start);
    if (end < 0) end = text.length;
    return end > start ? [start, end] : undefined;
  }
  if (rest.startsWith('[')) {
    // a list of secrets (`"seeds": ["…", "…"]`): everything to the closing bracket, or the end of the line
    const start = from + 1;
    const close = text.indexOf(']', start);
    const newline = text.indexOf('\n', start);
    const end = close >= 0 && (newline < 0 || close < newline) ? close : newline >= 0 ? newline : text.length;
    return end > start ? [start, end] : undefined;
  }
  let start = from;
  const scheme = AUTH_SCHEME.exec(rest);
  if (scheme !== null) start += scheme[0].length;
  const bare = BARE_VALUE.exec(text.slice(start, start + 4096));
  // JSON's literals hold no secret (`"jwt":null`)
  if (bare === null || (start === from && ['null', 'true', 'false'].includes(bare[0]))) return undefined;
  return [start, start + bare[0].length];
}

function maskValuesOfSecretKeys(text: string): string {
  let out = '';
  let copied = 0;
  KEY_AND_SEPARATOR.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = KEY_AND_SEPARATOR.exec(text)) !== null) {
    const name = m[3] ?? m[4] ?? '';
    const valueAt = m.index + m[0].length;
    if (!isSecretName(name)) {
      // the value may itself be a key (`a=b=c`): look again right after the separator
      KEY_AND_SEPARATOR.lastIndex = valueAt;
      continue;
    }
    const span = valueSpan(text, valueAt);
    if (span === undefined) {
      KEY_AND_SEPARATOR.lastIndex = valueAt;
      continue;
    }
    const [start, end] = span;
    if (text.slice(start, end) !== REDACTED) {
      out += text.slice(copied, start) + REDACTED;
      copied = end;
    }
    KEY_AND_SEPARATOR.lastIndex = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

// ---- exact values ----

/** `value` and the forms it takes inside JSON strings (once and twice escaped). */
function encodedForms(value: string): string[] {
  const once = JSON.stringify(value).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  return [...new Set([value, once, twice])];
}

function maskExact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

/**
 * Exact secret values to blank, longest first (so that a secret containing another is blanked
 * whole). Values shorter than MIN_SECRET_LENGTH are ignored.
 */
export class SecretSet {
  #values: string[] = [];

  constructor(values: Iterable<string | undefined> = []) {
    this.add(...values);
  }

  /** Adds exact values (also their JSON-escaped forms); empty, short and undefined ones are ignored. */
  add(...values: (string | undefined)[]): this {
    let changed = false;
    for (const value of values) {
      if (value === undefined || value.length < MIN_SECRET_LENGTH) continue;
      for (const form of encodedForms(value)) {
        if (!this.#values.includes(form)) {
          this.#values.push(form);
          changed = true;
        }
      }
    }
    if (changed) this.#values.sort((a, b) => b.length - a.length);
    return this;
  }

  get values(): readonly string[] {
    return this.#values;
  }
}

/** Blanks every secret in a foreign text (helper output, a node's reply, an echoed request). */
export function redactSecrets(text: string, secrets?: SecretSet): string {
  if (text === '') return text;
  let out = secrets === undefined ? text : maskExact(text, secrets.values);
  out = maskShapes(out);
  return maskValuesOfSecretKeys(out);
}

/**
 * Blanks the exact secrets and the shapes (PEM, JWT, nkey seed, URL password) only: for texts the
 * provisioner wrote, whose wording the key rules could misread (`invalid token: …`).
 */
export function maskKnownSecrets(text: string, secrets?: SecretSet): string {
  if (text === '') return text;
  const out = secrets === undefined ? text : maskExact(text, secrets.values);
  return maskShapes(out);
}

/** A text-to-text redaction bound to a set of exact secrets. */
export type Redactor = (text: string) => string;

/** The full redaction (redactSecrets) with these exact secrets. */
export function makeRedactor(secrets: SecretSet | Iterable<string> = []): Redactor {
  const set = secrets instanceof SecretSet ? secrets : new SecretSet(secrets);
  return (text) => redactSecrets(text, set);
}

/** The values of `map` (a helper's configuration) whose keys look secret. */
export function secretValuesOf(map: Readonly<Record<string, string>> | undefined): string[] {
  if (map === undefined) return [];
  return Object.entries(map).flatMap(([k, v]) => (isSecretName(k) && v !== '' ? [v] : []));
}

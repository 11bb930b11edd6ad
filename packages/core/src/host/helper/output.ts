// Bounded capture of helper output, excerpts for error messages, and redaction of secrets the
// helper may echo (its input carries the provisioning token and broker password in clear).
import type { HelperRequest } from './types.js';

/** How much of stdout/stderr an error message quotes. */
export const EXCERPT_BYTES = 500;

/** Collects chunks up to `limit` bytes; remembers how much more arrived. */
export class BoundedBuffer {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #seen = 0;

  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** A buffer that was filled elsewhere (the helper spawner): the kept bytes and the total seen. */
  static fromParts(limit: number, kept: Buffer, seen: number): BoundedBuffer {
    const b = new BoundedBuffer(limit);
    b.push(kept);
    b.#seen = Math.max(seen, b.#seen);
    return b;
  }

  /** Adds a chunk; returns false once the total exceeds the limit. */
  push(chunk: Buffer): boolean {
    this.#seen += chunk.length;
    const room = this.#limit - this.#kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.#chunks.push(part);
      this.#kept += part.length;
    }
    return this.#seen <= this.#limit;
  }

  get totalBytes(): number {
    return this.#seen;
  }

  get overflowed(): boolean {
    return this.#seen > this.#limit;
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.#chunks, this.#kept);
  }

  /** The kept bytes as UTF-8, with a note when some were dropped. */
  toText(): string {
    const text = this.toBuffer().toString('utf8');
    return this.overflowed ? `${text}\n[… ${this.#seen - this.#kept} more bytes dropped]` : text;
  }

  clear(): void {
    this.#chunks.length = 0;
    this.#kept = 0;
    this.#seen = 0;
  }
}

/** The first EXCERPT_BYTES bytes of `text` as a JSON string literal (newlines stay visible). */
export function quoteExcerpt(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= EXCERPT_BYTES) return JSON.stringify(text);
  // A cut through a multi-byte character decodes to U+FFFD, which is harmless here.
  const head = bytes.subarray(0, EXCERPT_BYTES).toString('utf8');
  return `${JSON.stringify(head)}… (${bytes.length} bytes)`;
}

// A private key PEM block, also when JSON-escaped (`\n` as two characters) or cut short.
const PRIVATE_KEY_PEM = /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g;

/** Blanks private keys and the request's secrets out of a text before it is logged or quoted. */
export type Redactor = (text: string) => string;

/** Secrets the request hands to the helper; short values are skipped to avoid blanking noise. */
export function requestSecrets(req: HelperRequest): string[] {
  const secrets: string[] = [];
  for (const claim of ['cht', 'chpwd'] as const) {
    const value = req.jwt?.[claim];
    if (typeof value === 'string' && value.length >= 4) {
      secrets.push(value);
      // As it appears inside JSON text when it holds characters JSON escapes.
      const escaped = JSON.stringify(value).slice(1, -1);
      if (escaped !== value) secrets.push(escaped);
    }
  }
  return secrets;
}

export function makeRedactor(secrets: readonly string[]): Redactor {
  return (text) => {
    let out = text.replace(PRIVATE_KEY_PEM, '[redacted private key]');
    for (const secret of secrets) out = out.split(secret).join('[redacted]');
    return out;
  };
}

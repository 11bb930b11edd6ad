// Bounded capture of helper output, excerpts for error messages, and the secrets of a request
// that the redactor (util/redact.ts) blanks when the helper echoes them (its input carries the
// provisioning token and broker password in clear).
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

/**
 * The secrets the request hands to the helper (the provisioning token, the broker password), which a helper may echo.
 */
export function requestSecrets(req: HelperRequest): string[] {
  const secrets: string[] = [];
  for (const claim of ['cht', 'chpwd'] as const) {
    const value = req.jwt?.[claim];
    if (typeof value === 'string' && value !== '') secrets.push(value);
  }
  return secrets;
}

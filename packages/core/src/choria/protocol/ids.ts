// Request identifiers: 32 hex characters for v1 (the schema demands exactly 32), KSUIDs for v2.
// Both are made by util/ids.ts; this module names them for the protocol and adds what only the
// client needs (a pool of random bytes, nanosecond timestamps).
import { randomBytes } from 'node:crypto';
import { ksuid, newRequestId } from '../../util/ids.js';

/** UUIDv4 without dashes, as go-choria generates v1 request ids (and gen25519 nonces). */
export const newV1RequestId: () => string = newRequestId;

/** A KSUID (27 base62 characters) for the time `nowMs`, the id format go-choria uses for v2 requests. */
export function newKsuid(nowMs: number = Date.now(), random?: Uint8Array): string {
  return ksuid(nowMs / 1000, random);
}

/**
 * Random bytes handed out from a block filled 4 KiB at a time: one trip to the system's random
 * source per 256 request ids instead of one per id, a system call each.
 */
export class RandomPool {
  #block: Buffer = Buffer.alloc(0);
  #at = 0;

  readonly #blockSize: number;

  constructor(blockSize = 4096) {
    this.#blockSize = blockSize;
  }

  take(n: number): Buffer {
    if (this.#at + n > this.#block.length) {
      this.#block = randomBytes(Math.max(this.#blockSize, n));
      this.#at = 0;
    }
    const out = this.#block.subarray(this.#at, this.#at + n);
    this.#at += n;
    return out;
  }
}

/** Unix time in nanoseconds (millisecond resolution), exact as a BigInt. */
export function nowNanoseconds(nowMs: number = Date.now()): bigint {
  return BigInt(Math.floor(nowMs)) * 1_000_000n;
}

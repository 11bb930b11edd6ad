// Request identifiers: 32 hex characters for v1 (the schema demands exactly 32), KSUIDs for v2.
import { randomBytes, randomUUID } from 'node:crypto';

/** UUIDv4 without dashes, as go-choria generates v1 request ids (and gen25519 nonces). */
export function newV1RequestId(): string {
  return randomUUID().replace(/-/g, '');
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KSUID_EPOCH_SECONDS = 1_400_000_000;
const KSUID_LENGTH = 27;

// Hand-written: a KSUID is 4 timestamp bytes + 16 random bytes in base62; the npm ksuid packages
// are unmaintained or pull in native code for something this small.
/** A KSUID (27 base62 characters), the id format go-choria uses for v2 requests. */
export function newKsuid(nowMs: number = Date.now(), random?: Uint8Array): string {
  const payload = Buffer.alloc(20);
  payload.writeUInt32BE(Math.max(0, Math.floor(nowMs / 1000) - KSUID_EPOCH_SECONDS), 0);
  if (random !== undefined && random.length >= 16) payload.set(random.subarray(0, 16), 4);
  else randomBytes(16).copy(payload, 4);
  let n = BigInt(`0x${payload.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(KSUID_LENGTH, '0');
}

/**
 * Random bytes handed out from a block filled 4 KiB at a time: one trip to the system's random
 * source per 256 request ids instead of one per id (each took ~25 µs on the benchmark VM).
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

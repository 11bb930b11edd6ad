// Identifiers: Choria request ids / nonces and KSUIDs.
import { randomBytes, randomUUID } from 'node:crypto';

/** A UUID v4 without dashes: 32 lowercase hex characters (Choria's request id and gen25519 nonce format). */
export function newRequestId(): string {
  return randomUUID().replaceAll('-', '');
}

const KSUID_EPOCH = 1_400_000_000;
const KSUID_PAYLOAD_BYTES = 16;
const KSUID_BYTES = 20;
const KSUID_LENGTH = 27;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const MAX_KSUID = (1n << 160n) - 1n;

// Hand-written rather than the npm `ksuid` package: the encoding is a 20-byte big integer in
// base 62, a few lines with BigInt, and the package pulls in its own randomness and async API
// while the caller must control the timestamp (it has to equal the token's `iat` second).

/**
 * A KSUID whose timestamp is `nowSeconds` (truncated to whole seconds): 4 bytes big-endian
 * `(seconds - 1400000000)` followed by 16 random bytes, base62 encoded, left-padded to 27 characters.
 */
export function ksuid(nowSeconds: number, random?: Uint8Array): string {
  const offset = Math.floor(nowSeconds) - KSUID_EPOCH;
  if (!Number.isFinite(offset) || offset < 0 || offset > 0xffff_ffff) {
    throw new Error(`cannot make a KSUID for time ${nowSeconds}: outside the KSUID range`);
  }
  const payload = random ?? randomBytes(KSUID_PAYLOAD_BYTES);
  if (payload.length !== KSUID_PAYLOAD_BYTES) {
    throw new Error(`KSUID payload must be ${KSUID_PAYLOAD_BYTES} bytes, got ${payload.length}`);
  }
  const raw = Buffer.alloc(KSUID_BYTES);
  raw.writeUInt32BE(offset, 0);
  raw.set(payload, 4);
  return encodeBase62(BigInt(`0x${raw.toString('hex')}`)).padStart(KSUID_LENGTH, '0');
}

/** The Unix time (seconds) stored in a KSUID. */
export function ksuidTimestamp(id: string): number {
  return ksuidBytes(id).readUInt32BE(0) + KSUID_EPOCH;
}

/** The 20 raw bytes of a KSUID string; throws on anything that is not a 27-character base62 KSUID. */
export function ksuidBytes(id: string): Buffer {
  if (id.length !== KSUID_LENGTH)
    throw new Error(`invalid KSUID ${JSON.stringify(id)}: must be ${KSUID_LENGTH} characters`);
  let value = 0n;
  for (const ch of id) {
    const digit = BASE62.indexOf(ch);
    if (digit < 0) throw new Error(`invalid KSUID ${JSON.stringify(id)}: ${JSON.stringify(ch)} is not a base62 digit`);
    value = value * 62n + BigInt(digit);
  }
  if (value > MAX_KSUID) throw new Error(`invalid KSUID ${JSON.stringify(id)}: value exceeds 160 bits`);
  return Buffer.from(value.toString(16).padStart(KSUID_BYTES * 2, '0'), 'hex');
}

function encodeBase62(value: bigint): string {
  let out = '';
  let rest = value;
  while (rest > 0n) {
    out = BASE62.charAt(Number(rest % 62n)) + out;
    rest /= 62n;
  }
  return out;
}

// KSUIDs: 4-byte big-endian (seconds - 1400000000) + 16 random bytes, base62,
// left-padded to 27 characters. Used for provisioning token `jti` and to check that a chained server
// token's `jti` carries its `iat` second.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const EPOCH = 1_400_000_000;

export function newKsuid(unixSeconds: number): string {
  const bytes = Buffer.alloc(20);
  bytes.writeUInt32BE((unixSeconds - EPOCH) >>> 0, 0);
  randomBytes(16).copy(bytes, 4);
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET.charAt(Number(n % 62n)) + out;
    n /= 62n;
  }
  return out.padStart(27, '0');
}

/** The Unix second embedded in a KSUID, or undefined when the text is not a KSUID. */
export function ksuidSeconds(ksuid: string): number | undefined {
  if (!/^[0-9A-Za-z]{27}$/.test(ksuid)) return undefined;
  let n = 0n;
  for (const c of ksuid) n = n * 62n + BigInt(ALPHABET.indexOf(c));
  if (n >= 1n << 160n) return undefined;
  return Number(n >> 128n) + EPOCH;
}

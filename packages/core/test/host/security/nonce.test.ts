import { sign } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ed25519KeyFromSeed } from '../../../src/util/ed25519.js';
import { verifyNonceSignature } from '../../../src/host/security/nonce.js';
import { newRequestId } from '../../../src/util/ids.js';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface NonceKat {
  node_seed_hex: string;
  public_key_hex: string;
  nonce: string;
  signature_hex: string;
  negative: { case: string; nonce?: string; signature_prefix_hex?: string; expect: string }[];
}

const kat = readVectorJson<NonceKat>('crypto', 'ed25519-nonce-kat.json');
const nodeKey = ed25519KeyFromSeed(Buffer.from(kat.node_seed_hex, 'hex'));

describe('verifyNonceSignature', () => {
  it('accepts the known answer and returns the public key as received', () => {
    expect(verifyNonceSignature({ public_key: kat.public_key_hex, signature: kat.signature_hex }, kat.nonce)).toEqual({
      publicKeyHex: kat.public_key_hex,
    });
    const upper = kat.public_key_hex.toUpperCase();
    expect(verifyNonceSignature({ public_key: upper, signature: kat.signature_hex }, kat.nonce).publicKeyHex).toBe(
      upper,
    );
  });

  it('signs the ASCII nonce, not its hex-decoded bytes', () => {
    const [changedNonce, hexDecoded] = kat.negative;
    expect(changedNonce?.nonce).toBeDefined();
    expect(() =>
      verifyNonceSignature({ public_key: kat.public_key_hex, signature: kat.signature_hex }, changedNonce?.nonce ?? ''),
    ).toThrow(changedNonce?.expect ?? 'x');
    const wrongEncoding = sign(null, Buffer.from(kat.nonce, 'hex'), nodeKey).toString('hex');
    expect(wrongEncoding.startsWith(hexDecoded?.signature_prefix_hex ?? 'x')).toBe(true);
    expect(() => verifyNonceSignature({ public_key: kat.public_key_hex, signature: wrongEncoding }, kat.nonce)).toThrow(
      hexDecoded?.expect ?? 'x',
    );
  });

  it('round-trips a fresh nonce', () => {
    const nonce = newRequestId();
    const signature = sign(null, Buffer.from(nonce), nodeKey).toString('hex');
    expect(verifyNonceSignature({ public_key: kat.public_key_hex, signature }, nonce).publicKeyHex).toBe(
      kat.public_key_hex,
    );
  });

  it.each([
    [{ signature: 'aa' }, 'no public key received'],
    [{ public_key: '', signature: 'aa' }, 'no public key received'],
    [{ public_key: 'aa' }, 'no signature received'],
    [{ public_key: 'aa', signature: null }, 'no signature received'],
    [{ public_key: 'zz', signature: 'aa' }, "invalid public key received: encoding/hex: invalid byte: U+007A 'z'"],
    [{ public_key: 5, signature: 'aa' }, 'invalid public key received: expected a hex string, got number'],
    [{ public_key: 'aa', signature: 'xx' }, 'invalid signature'],
    [
      { public_key: 'aabb', signature: 'aa' },
      'invalid public key received: ed25519 public key must be 32 bytes, got 2',
    ],
  ])('rejects %j', (reply, message) => {
    expect(() => verifyNonceSignature(reply, kat.nonce)).toThrow(message);
  });

  it('rejects a short signature and a signature by another key', () => {
    expect(() =>
      verifyNonceSignature({ public_key: kat.public_key_hex, signature: kat.signature_hex.slice(0, 126) }, kat.nonce),
    ).toThrow('invalid nonce signature');
    const other = ed25519KeyFromSeed(Buffer.alloc(32, 7));
    const signature = sign(null, Buffer.from(kat.nonce), other).toString('hex');
    expect(() => verifyNonceSignature({ public_key: kat.public_key_hex, signature }, kat.nonce)).toThrow(
      'invalid nonce signature',
    );
  });
});

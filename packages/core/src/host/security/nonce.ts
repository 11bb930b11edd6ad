// The `gen25519` proof of possession: the node signs the provisioner's nonce.
import { verify as cryptoVerify } from 'node:crypto';
import { errorText } from '../../util/values.js';
import { decodeHexStrict } from '../../util/go-hex.js';
import { ed25519PublicKeyFromRaw } from '../../util/ed25519.js';

const ED25519_PUBLIC_BYTES = 32;
const ED25519_SIGNATURE_BYTES = 64;

/**
 * Checks a `gen25519` reply: `signature` must be the Ed25519 signature by `public_key` over the ASCII
 * bytes of the nonce string. Returns the public key exactly as received.
 */
export function verifyNonceSignature(
  reply: { public_key?: unknown; signature?: unknown },
  nonce: string,
): { publicKeyHex: string } {
  const publicKeyHex = requiredString(reply.public_key, 'no public key received', 'invalid public key received');
  const signatureHex = requiredString(reply.signature, 'no signature received', 'invalid signature');

  let publicKey: Buffer;
  try {
    publicKey = decodeHexStrict(publicKeyHex);
  } catch (err) {
    throw new Error(`invalid public key received: ${errorText(err)}`, { cause: err });
  }
  let signature: Buffer;
  try {
    signature = decodeHexStrict(signatureHex);
  } catch (err) {
    throw new Error('invalid signature', { cause: err });
  }

  // Go would panic on a short key; a wrong signature length simply does not verify there.
  if (publicKey.length !== ED25519_PUBLIC_BYTES) {
    throw new Error(
      `invalid public key received: ed25519 public key must be ${ED25519_PUBLIC_BYTES} bytes, got ${publicKey.length}`,
    );
  }
  if (signature.length !== ED25519_SIGNATURE_BYTES) throw new Error('invalid nonce signature');
  if (!cryptoVerify(null, Buffer.from(nonce, 'utf8'), ed25519PublicKeyFromRaw(publicKey), signature)) {
    throw new Error('invalid nonce signature');
  }
  return { publicKeyHex };
}

function requiredString(value: unknown, missing: string, invalid: string): string {
  if (value === undefined || value === null || value === '') throw new Error(missing);
  if (typeof value !== 'string') throw new Error(`${invalid}: expected a hex string, got ${typeof value}`);
  return value;
}

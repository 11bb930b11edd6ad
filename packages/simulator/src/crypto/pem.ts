// PEM reading with Go's encoding/pem behaviour (first block wins, `Key: Value` headers) and the
// node side of the legacy OpenSSL PEM decryption. Decryption is done here
// rather than with crypto.createPrivateKey({passphrase}) because Go does not parse the decrypted
// bytes: it writes whatever DER comes out, so a PKCS#8 body under an `RSA PRIVATE KEY` label is
// accepted by a real node and must be accepted here too.
import { createDecipheriv, createHash } from 'node:crypto';
import { goStdBase64Decode } from '../wire/base64.js';

export interface PemBlock {
  type: string;
  headers: Record<string, string>;
  bytes: Buffer;
}

const BLOCK = /-----BEGIN ([^\r\n-]+)-----\r?\n([\s\S]*?)-----END \1-----/g;

export function decodeFirstPemBlock(text: string): PemBlock | undefined {
  for (const m of text.matchAll(BLOCK)) {
    const type = m[1] ?? '';
    const lines = (m[2] ?? '').split(/\r?\n/);
    const headers: Record<string, string> = {};
    let i = 0;
    for (; i < lines.length; i++) {
      const line = lines[i] ?? '';
      const colon = line.indexOf(':');
      if (colon < 0) break;
      headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
    }
    const body = lines.slice(i).join('').replace(/[ \t]/g, '');
    const bytes = goStdBase64Decode(body);
    if (bytes !== undefined) return { type, headers, bytes };
  }
  return undefined;
}

export function encodePem(type: string, der: Uint8Array): string {
  const b64 = Buffer.from(der).toString('base64');
  const lines = b64.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${type}-----\n${lines.join('\n')}${lines.length > 0 ? '\n' : ''}-----END ${type}-----\n`;
}

const CIPHERS: Readonly<Record<string, { node: string; keyLen: number; block: number }>> = {
  'DES-CBC': { node: 'des-cbc', keyLen: 8, block: 8 },
  'DES-EDE3-CBC': { node: 'des-ede3-cbc', keyLen: 24, block: 8 },
  'AES-128-CBC': { node: 'aes-128-cbc', keyLen: 16, block: 16 },
  'AES-192-CBC': { node: 'aes-192-cbc', keyLen: 24, block: 16 },
  'AES-256-CBC': { node: 'aes-256-cbc', keyLen: 32, block: 16 },
};

/** OpenSSL EVP_BytesToKey with MD5 and one iteration, key part only. */
function bytesToKey(password: Buffer, salt: Buffer, keyLen: number): Buffer {
  const parts: Buffer[] = [];
  let prev = Buffer.alloc(0);
  let total = 0;
  while (total < keyLen) {
    prev = createHash('md5')
      .update(Buffer.concat([prev, password, salt]))
      .digest();
    parts.push(prev);
    total += prev.length;
  }
  return Buffer.concat(parts).subarray(0, keyLen);
}

export type PemDecryptResult =
  { ok: true; der: Buffer } | { ok: false; reason: 'bad-key' | 'not-encrypted' | 'decrypt'; error: string };

/** Decrypts the first PEM block of `pemText` with `password` the way go-choria's configure does. */
export function decryptLegacyPemKey(pemText: string, password: Buffer): PemDecryptResult {
  const block = decodeFirstPemBlock(pemText);
  if (block === undefined) return { ok: false, reason: 'bad-key', error: 'bad key received' };
  const dek = block.headers['DEK-Info'];
  if (dek === undefined) return { ok: false, reason: 'not-encrypted', error: 'key is not encrypted' };
  const comma = dek.indexOf(',');
  if (comma < 0) return { ok: false, reason: 'decrypt', error: 'x509: malformed DEK-Info header' };
  const cipher = CIPHERS[dek.slice(0, comma)];
  if (cipher === undefined) return { ok: false, reason: 'decrypt', error: 'x509: unknown encryption mode' };
  const ivHex = dek.slice(comma + 1);
  if (!/^[0-9a-fA-F]*$/.test(ivHex) || ivHex.length !== cipher.block * 2) {
    return { ok: false, reason: 'decrypt', error: 'x509: incorrect IV size' };
  }
  const iv = Buffer.from(ivHex, 'hex');
  const data = block.bytes;
  if (data.length === 0 || data.length % cipher.block !== 0) {
    return { ok: false, reason: 'decrypt', error: 'x509: encrypted PEM data is not a multiple of the block size' };
  }
  let plain: Buffer;
  try {
    const d = createDecipheriv(cipher.node, bytesToKey(password, iv.subarray(0, 8), cipher.keyLen), iv);
    d.setAutoPadding(false);
    plain = Buffer.concat([d.update(data), d.final()]);
  } catch (e) {
    return { ok: false, reason: 'decrypt', error: `x509: ${e instanceof Error ? e.message : String(e)}` };
  }
  const pad = plain[plain.length - 1] ?? 0;
  if (pad === 0 || pad > cipher.block || plain.subarray(plain.length - pad).some((b) => b !== pad)) {
    return { ok: false, reason: 'decrypt', error: 'x509: decryption password incorrect' };
  }
  return { ok: true, der: plain.subarray(0, plain.length - pad) };
}

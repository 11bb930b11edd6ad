// Test-side legacy PEM encryption, written independently of the simulator.
import { createCipheriv, createHash, randomBytes } from 'node:crypto';

export function encryptLegacyPem(der: Buffer, password: Buffer): string {
  const iv = randomBytes(16);
  const salt = iv.subarray(0, 8);
  const d1 = createHash('md5')
    .update(Buffer.concat([password, salt]))
    .digest();
  const d2 = createHash('md5')
    .update(Buffer.concat([d1, password, salt]))
    .digest();
  const c = createCipheriv('aes-256-cbc', Buffer.concat([d1, d2]), iv);
  const body = Buffer.concat([c.update(der), c.final()]).toString('base64');
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-256-CBC,${iv.toString('hex')}\n\n${lines.join('\n')}\n-----END RSA PRIVATE KEY-----\n`;
}

// Provisioning JWT signer key material for the bin: a given key file, or keys read from / written
// to a keys directory (a fresh temp dir by default) so a provisioner can be pointed at the public half.
import { createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519PrivateFromSeedHex, ed25519PublicHex, generateSigner } from './crypto/keys.js';

export interface SignerMaterial {
  signer: 'rsa' | 'ed25519' | 'none';
  keyPem?: string;
  seedHex?: string;
  /** file holding the public half (jwt_verify_cert for the provisioner) */
  publicFile?: string;
  keysDir?: string;
  generated: boolean;
}

export interface SignerRequest {
  signer: 'rsa' | 'ed25519' | 'none' | undefined;
  keyFile: string | undefined;
  keysDir: string | undefined;
  protocol: 'v1' | 'v2' | 'mixed';
}

const FILES = {
  rsa: { priv: 'provisioning-signer.pem', pub: 'provisioning-signer-public.pem' },
  ed25519: { priv: 'provisioning-signer.seed', pub: 'provisioning-signer.public' },
} as const;

function kindOf(text: string, file: string): 'rsa' | 'ed25519' {
  if (text.startsWith('-----BEGIN')) return 'rsa';
  if (/^[0-9a-fA-F]{64}$/.test(text.trim())) return 'ed25519';
  throw new Error(`${file} is neither an RSA private key PEM nor a 64 hex character ed25519 seed`);
}

function publicText(kind: 'rsa' | 'ed25519', privateText: string): string {
  if (kind === 'ed25519') return ed25519PublicHex(ed25519PrivateFromSeedHex(privateText.trim()));
  return createPublicKey(privateText).export({ format: 'pem', type: 'spki' }).toString();
}

function material(
  kind: 'rsa' | 'ed25519',
  privateText: string,
  extra: Omit<SignerMaterial, 'signer' | 'keyPem' | 'seedHex'>,
): SignerMaterial {
  return kind === 'rsa'
    ? { signer: kind, keyPem: privateText, ...extra }
    : { signer: kind, seedHex: privateText.trim(), ...extra };
}

export function prepareSignerMaterial(req: SignerRequest): SignerMaterial {
  if (req.signer === 'none') return { signer: 'none', generated: false };
  if (req.keyFile !== undefined) {
    const text = readFileSync(req.keyFile, 'utf8');
    const kind = kindOf(text, req.keyFile);
    if (req.signer !== undefined && req.signer !== kind)
      throw new Error(`--jwt-signer ${req.signer} does not match the ${kind} key in ${req.keyFile}`);
    return material(kind, text, { generated: false });
  }
  const kind = req.signer ?? (req.protocol === 'v2' ? 'ed25519' : 'rsa');
  const dir = req.keysDir ?? mkdtempSync(join(tmpdir(), 'choria-simulator-keys-'));
  mkdirSync(dir, { recursive: true });
  const privFile = join(dir, FILES[kind].priv);
  const pubFile = join(dir, FILES[kind].pub);
  let privateText: string;
  let generated = false;
  if (existsSync(privFile)) {
    privateText = readFileSync(privFile, 'utf8');
    kindOf(privateText, privFile);
  } else {
    const fresh = generateSigner(kind);
    privateText = fresh.privateText;
    writeFileSync(privFile, privateText, { mode: 0o600 });
    generated = true;
  }
  if (!existsSync(pubFile)) writeFileSync(pubFile, publicText(kind, privateText), { mode: 0o644 });
  return material(kind, privateText, { publicFile: pubFile, keysDir: dir, generated });
}

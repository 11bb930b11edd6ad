// The x509 `file`/`puppet` provider: RSA PKCS#1 v1.5 SHA-256 over the Request JSON.
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { SecurityError } from '../errors.js';
import { x509CallerId, type RequestSigner } from './types.js';

export interface FileSignerOptions {
  /** the certificate file text, sent verbatim as `pubcert` */
  readonly certificatePem: string;
  /** PEM (PKCS#1 or PKCS#8) or a loaded key; must be RSA */
  readonly privateKey: KeyObject | string;
  readonly certname: string;
}

function loadRsaKey(key: KeyObject | string, label: string): KeyObject {
  let keyObject: KeyObject;
  try {
    keyObject = typeof key === 'string' ? createPrivateKey(key) : key;
  } catch (err) {
    throw new SecurityError(`could not load private key ${label}: ${(err as Error).message}`);
  }
  if (keyObject.type !== 'private' || keyObject.asymmetricKeyType !== 'rsa') {
    throw new SecurityError(
      `private key ${label} is not an RSA private key (only RSA is supported by the x509 providers)`,
    );
  }
  return keyObject;
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new SecurityError(`could not read ${what} ${path}: ${(err as Error).message}`);
  }
}

export class FileSigner implements RequestSigner {
  readonly kind = 'file';
  readonly protocol = 'v1';
  readonly callerId: string;
  readonly credential: string;
  readonly #key: KeyObject;

  constructor(opts: FileSignerOptions, keyLabel = '(inline)') {
    if (opts.certname === '') throw new SecurityError('x509 signer: certname must not be empty');
    if (!opts.certificatePem.includes('-----BEGIN CERTIFICATE-----'))
      throw new SecurityError('x509 signer: the certificate is not a PEM certificate');
    this.#key = loadRsaKey(opts.privateKey, keyLabel);
    this.credential = opts.certificatePem;
    this.callerId = x509CallerId(opts.certname);
  }

  static fromFiles(certificateFile: string, keyFile: string, certname: string): FileSigner {
    const certificatePem = readText(certificateFile, 'certificate');
    const keyPem = readText(keyFile, 'private key');
    return new FileSigner({ certificatePem, privateKey: keyPem, certname }, keyFile);
  }

  sign(requestJson: Uint8Array): string {
    // RSA keys sign with PKCS#1 v1.5 padding by default, which is what Go's SignPKCS1v15 does
    return sign('sha256', requestJson, this.#key).toString('base64');
  }
}

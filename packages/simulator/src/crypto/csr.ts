// gencsr's key and CSR: a real RSA key and a PKCS#10 request signed with
// SHA256-RSA; the `public_key` output is PKCS#1 labelled `PUBLIC KEY`, as upstream does.
import 'reflect-metadata';
import { createPublicKey, webcrypto } from 'node:crypto';
import { Pkcs10CertificateRequestGenerator } from '@peculiar/x509';
import { encodePem } from './pem.js';

export interface CsrSubject {
  cn: string;
  C?: string | undefined;
  L?: string | undefined;
  O?: string | undefined;
  OU?: string | undefined;
  ST?: string | undefined;
}

export interface GeneratedCsr {
  csrPem: string;
  /** PKCS#1 RSAPublicKey DER under a `PUBLIC KEY` label (upstream quirk) */
  publicKeyPem: string;
}

const RSA_ALGORITHM = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' } as const;

/** Generates the key off the main thread (webcrypto) so thousands of nodes do not stall the loop. */
export async function generateCsr(subject: CsrSubject, rsaBits: number): Promise<GeneratedCsr> {
  const keys = await webcrypto.subtle.generateKey(
    { ...RSA_ALGORITHM, modulusLength: rsaBits, publicExponent: new Uint8Array([1, 0, 1]) },
    true,
    ['sign', 'verify'],
  );
  // Go's pkix.Name.ToRDNSequence order: C, ST, L, O, OU, CN.
  const name: Array<Record<string, string[]>> = [];
  const add = (attr: string, value: string | undefined): void => {
    if (value !== undefined && value !== '') name.push({ [attr]: [value] });
  };
  add('C', subject.C);
  add('ST', subject.ST);
  add('L', subject.L);
  add('O', subject.O);
  add('OU', subject.OU);
  add('CN', subject.cn);
  const csr = await Pkcs10CertificateRequestGenerator.create(
    { name, keys, signingAlgorithm: RSA_ALGORITHM },
    webcrypto as unknown as Parameters<typeof Pkcs10CertificateRequestGenerator.create>[1],
  );
  // The generated key itself is never exported through a KeyObject (crypto/keys.ts says why): its
  // SPKI comes from WebCrypto's export, and the PKCS#1 form from a key imported from that.
  const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
  const pkcs1 = createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ format: 'der', type: 'pkcs1' });
  return {
    csrPem: encodePem('CERTIFICATE REQUEST', new Uint8Array(csr.rawData)),
    publicKeyPem: encodePem('PUBLIC KEY', pkcs1),
  };
}

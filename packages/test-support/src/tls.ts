// A throw-away PKI for end-to-end tests on loopback: a CA, a broker certificate for 127.0.0.1 and
// client certificates, written as PEM files, plus the nats-server `tls {}` block that uses them.
// @peculiar/x509 builds the certificates (node:crypto can verify but not issue them).
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

// node's webcrypto is the WebCrypto the library expects (passed explicitly, no global provider)
const crypto = webcrypto;
type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

const RSA = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
} as const;
const DAY_MS = 86_400_000;

export interface TestCa {
  readonly certPem: string;
  readonly cert: x509.X509Certificate;
  readonly key: CryptoKey;
}

export interface IssuedCert {
  readonly certPem: string;
  /** PKCS#8 `PRIVATE KEY` PEM */
  readonly keyPem: string;
}

export interface IssueOptions {
  readonly commonName: string;
  readonly dnsNames?: readonly string[];
  readonly ips?: readonly string[];
  /** `both`: a broker in a cluster, which is also a TLS client of its peers */
  readonly usage: 'server' | 'client' | 'both';
  /** certify this public key instead of a fresh pair (then keyPem is empty) */
  readonly publicKey?: CryptoKey;
  /** how long from now the certificate stays valid; default 30 days */
  readonly validForMs?: number;
}

async function rsaPair(): Promise<CryptoKeyPair> {
  return (await crypto.subtle.generateKey(RSA, true, ['sign', 'verify'])) as CryptoKeyPair;
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await crypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

const serial = (): string => `01${randomBytes(8).toString('hex')}`;

export async function createTestCa(commonName = 'Choria Provisioner Test CA'): Promise<TestCa> {
  const keys = await rsaPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serial(),
      name: `CN=${commonName}`,
      notBefore: new Date(Date.now() - DAY_MS),
      notAfter: new Date(Date.now() + 30 * DAY_MS),
      keys,
      signingAlgorithm: RSA,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem'), cert, key: keys.privateKey };
}

export async function issueCertificate(ca: TestCa, opts: IssueOptions): Promise<IssuedCert> {
  const keys = opts.publicKey === undefined ? await rsaPair() : undefined;
  const publicKey = opts.publicKey ?? (keys as CryptoKeyPair).publicKey;
  const names: x509.JsonGeneralName[] = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serial(),
      subject: `CN=${opts.commonName}`,
      issuer: ca.cert.subject,
      notBefore: new Date(Date.now() - DAY_MS),
      notAfter: new Date(Date.now() + (opts.validForMs ?? 30 * DAY_MS)),
      signingKey: ca.key,
      publicKey,
      signingAlgorithm: RSA,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension(
          opts.usage === 'both'
            ? [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]
            : [opts.usage === 'server' ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth],
        ),
        ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
        await x509.AuthorityKeyIdentifierExtension.create(ca.cert, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem'), keyPem: keys === undefined ? '' : await pkcs8Pem(keys.privateKey) };
}

export interface PemFiles {
  readonly certFile: string;
  readonly keyFile: string;
  readonly certPem: string;
}

export interface TestPki {
  readonly dir: string;
  readonly ca: TestCa;
  readonly caFile: string;
  /** the broker's certificate, for 127.0.0.1 and localhost */
  readonly server: PemFiles;
  /** client certificates by common name */
  readonly clients: Readonly<Record<string, PemFiles>>;
}

/** A CA, a broker certificate for 127.0.0.1 and one client certificate per name, in `dir` (default: a new temp dir). */
export async function createTestPki(
  clientNames: readonly string[],
  dir = mkdtempSync(join(tmpdir(), 'cpts-pki-')),
): Promise<TestPki> {
  const ca = await createTestCa();
  const write = (name: string, issued: IssuedCert): PemFiles => {
    const certFile = join(dir, `${name}.pem`);
    const keyFile = join(dir, `${name}-key.pem`);
    writeFileSync(certFile, issued.certPem);
    writeFileSync(keyFile, issued.keyPem, { mode: 0o600 });
    return { certFile, keyFile, certPem: issued.certPem };
  };
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, ca.certPem);
  const [server, ...clients] = await Promise.all([
    issueCertificate(ca, { commonName: 'broker.test', dnsNames: ['localhost'], ips: ['127.0.0.1'], usage: 'server' }),
    ...clientNames.map((commonName) => issueCertificate(ca, { commonName, usage: 'client' })),
  ]);
  const byName: Record<string, PemFiles> = {};
  clientNames.forEach((name, i) => {
    byName[name] = write(name, clients[i] as IssuedCert);
  });
  return { dir, ca, caFile, server: write('broker', server as IssuedCert), clients: byName };
}

/**
 * The nats-server `tls {}` block for this PKI. `verifyClients` demands a client certificate signed
 * by the CA (a Choria broker on an x509 network); without it the broker only presents its own
 * (enough for the `choria` provider, which does not verify the broker when it has no CA).
 */
export function natsTlsBlock(pki: TestPki, opts: { verifyClients: boolean }): string {
  const lines = [
    `  cert_file: ${JSON.stringify(pki.server.certFile)}`,
    `  key_file: ${JSON.stringify(pki.server.keyFile)}`,
    ...(opts.verifyClients ? [`  ca_file: ${JSON.stringify(pki.caFile)}`, '  verify: true'] : []),
    // RSA handshakes on a busy 2-core CI machine can exceed the 0.5 s default
    '  timeout: 5',
  ];
  return `tls {\n${lines.join('\n')}\n}\n`;
}

// The lab's x509 material, made with the same generator as the unit tests' PKI (../tls.ts): one CA
// that the broker, the provisioners and the pki row's helper share, the broker's certificate for
// 127.0.0.1, the provisioners' client certificates, the signer of provisioning.jwt, and
// throw-away pairs for servers that start with a configuration file.
import 'reflect-metadata';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { createTestCa, issueCertificate, type IssuedCert, type TestCa } from '../tls.js';

export interface LabPair {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface LabPki {
  readonly dir: string;
  readonly ca: TestCa;
  readonly caFile: string;
  /** PKCS#8 key of the CA, for the pki row's helper */
  readonly caKeyFile: string;
  readonly broker: LabPair;
  /** signs provisioning.jwt; its certificate is the broker's signer_cert and the provisioners' jwt_verify_cert */
  readonly signer: LabPair;
  /** a client certificate for `identity`, made once and kept */
  client(identity: string): Promise<LabPair>;
  /**
   * certificate.pem, private.pem and ca.pem for `identity` in `dir` (the layout go-choria's configure action writes)
   */
  serverPair(identity: string, dir: string): Promise<LabPair>;
}

export const BROKER_IDENTITY = 'broker.lab.example';

function write(dir: string, name: string, issued: IssuedCert): LabPair {
  const certFile = join(dir, `${name}.pem`);
  const keyFile = join(dir, `${name}-key.pem`);
  writeFileSync(certFile, issued.certPem);
  writeFileSync(keyFile, issued.keyPem, { mode: 0o600 });
  return { certFile, keyFile };
}

export async function createLabPki(dir: string): Promise<LabPki> {
  mkdirSync(dir, { recursive: true });
  const ca = await createTestCa('Choria Interop Lab CA');
  const caFile = join(dir, 'ca.pem');
  const caKeyFile = join(dir, 'ca-key.pem');
  writeFileSync(caFile, ca.certPem);
  const caKey = await webcrypto.subtle.exportKey('pkcs8', ca.key);
  writeFileSync(caKeyFile, x509.PemConverter.encode(caKey, 'PRIVATE KEY'), { mode: 0o600 });
  const [brokerCert, signerCert] = await Promise.all([
    issueCertificate(ca, {
      commonName: BROKER_IDENTITY,
      dnsNames: ['localhost', BROKER_IDENTITY],
      ips: ['127.0.0.1'],
      usage: 'both',
    }),
    issueCertificate(ca, { commonName: 'provisioning-signer.lab.example', usage: 'client' }),
  ]);
  const clients = new Map<string, Promise<LabPair>>();
  return {
    dir,
    ca,
    caFile,
    caKeyFile,
    broker: write(dir, 'broker', brokerCert),
    signer: write(dir, 'signer', signerCert),
    client(identity) {
      let pair = clients.get(identity);
      if (pair === undefined) {
        pair = issueCertificate(ca, { commonName: identity, usage: 'client' }).then((c) =>
          write(dir, `client-${identity}`, c),
        );
        clients.set(identity, pair);
      }
      return pair;
    },
    async serverPair(identity, sslDir) {
      mkdirSync(sslDir, { recursive: true });
      const issued = await issueCertificate(ca, { commonName: identity, dnsNames: [identity], usage: 'client' });
      const certFile = join(sslDir, 'certificate.pem');
      const keyFile = join(sslDir, 'private.pem');
      writeFileSync(certFile, issued.certPem);
      writeFileSync(keyFile, issued.keyPem, { mode: 0o600 });
      writeFileSync(join(sslDir, 'ca.pem'), ca.certPem);
      return { certFile, keyFile };
    },
  };
}

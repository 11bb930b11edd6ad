#!/usr/bin/env node
// Example helper for x509 networks (features: jwt + pki): signs the node's CSR with a small local CA
// and returns a file-security configuration. The CA is created on first use in $CA_DIR (default
// ./example-ca) unless $CA_CERT and $CA_KEY name an existing one.
//
// Needs @peculiar/x509 (installed with this repository). Reads one JSON request on stdin, prints one
// JSON reply on stdout, always exits 0: soft failures are expressed as `defer`.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { webcrypto, randomBytes } from 'node:crypto';

x509.cryptoProvider.set(webcrypto);
const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
const brokers = process.env.BROKER_URL ?? 'nats://broker.example.net:4222';

function pemToDer(pem) {
  return Buffer.from(pem.replace(/-----(BEGIN|END)[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

async function loadOrCreateCa() {
  const dir = process.env.CA_DIR ?? join(process.cwd(), 'example-ca');
  const certFile = process.env.CA_CERT ?? join(dir, 'ca.pem');
  const keyFile = process.env.CA_KEY ?? join(dir, 'ca-key.pem');
  if (!existsSync(certFile) || !existsSync(keyFile)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: randomBytes(8).toString('hex'),
      name: 'CN=Example Choria CA',
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 10 * 365 * 86400_000),
      keys,
      signingAlgorithm: alg,
      extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)],
    });
    const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
    // Written via rename so concurrent helper runs never read a half-written CA.
    const tmp = `.${process.pid}`;
    writeFileSync(keyFile + tmp, x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'), { mode: 0o600 });
    writeFileSync(certFile + tmp, cert.toString('pem') + '\n');
    if (!existsSync(keyFile)) {
      renameSync(keyFile + tmp, keyFile);
      renameSync(certFile + tmp, certFile);
    }
  }
  const caPem = readFileSync(certFile, 'utf8');
  const caCert = new x509.X509Certificate(caPem);
  const caKey = await webcrypto.subtle.importKey('pkcs8', pemToDer(readFileSync(keyFile, 'utf8')), alg, false, ['sign']);
  return { caPem, caCert, caKey };
}

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const reply = { defer: false, msg: '', certificate: '', ca: '', configuration: {} };
  reply.configuration = {
    identity: req.identity,
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': brokers,
  };
  if (req.csr && req.csr.csr) {
    try {
      const { caPem, caCert, caKey } = await loadOrCreateCa();
      const csr = new x509.Pkcs10CertificateRequest(req.csr.csr);
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: randomBytes(8).toString('hex'),
        subject: csr.subject,
        issuer: caCert.subject,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + 365 * 86400_000),
        publicKey: await csr.publicKey.export(alg, ['verify']),
        signingKey: caKey,
        signingAlgorithm: alg,
        extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: req.identity }])],
      });
      const ssldir = req.csr.ssldir;
      reply.certificate = cert.toString('pem') + '\n';
      reply.ca = caPem;
      reply.msg = `signed by ${caCert.subject}`;
      Object.assign(reply.configuration, {
        'plugin.security.provider': 'file',
        'plugin.security.file.certificate': `${ssldir}/certificate.pem`,
        'plugin.security.file.key': `${ssldir}/private.pem`,
        'plugin.security.file.ca': `${ssldir}/ca.pem`,
        'plugin.security.file.cache': `${ssldir}/cache`,
      });
    } catch (err) {
      reply.defer = true;
      reply.msg = `could not sign the CSR of ${req.identity}: ${err instanceof Error ? err.message : String(err)}`;
    }
  }
  process.stdout.write(JSON.stringify(reply) + '\n');
}

main().catch((err) => {
  process.stdout.write(JSON.stringify({ defer: true, msg: `helper failed: ${err instanceof Error ? err.message : String(err)}` }) + '\n');
});

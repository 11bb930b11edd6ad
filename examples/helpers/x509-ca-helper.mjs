#!/usr/bin/env node
// Example helper for x509 networks (features: jwt + pki): signs the node's CSR with a small local CA
// and returns a file-security configuration. The CA is created on first use in $CA_DIR (default
// ./example-ca) unless $CA_CERT and $CA_KEY name an existing one.
//
// Needs @peculiar/x509 (installed with this repository). Always answers with a reply and exits 0:
// soft failures are expressed as `defer`. Two ways to run it:
//   x509-ca-helper.mjs          one request on stdin, one reply on stdout (a process per node)
//   x509-ca-helper.mjs --lines  JSON lines for `helper_mode: pool`: one request per line in, one
//                               reply line out, in order, until stdin closes; the CA is loaded once
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { webcrypto, randomBytes } from 'node:crypto';

x509.cryptoProvider.set(webcrypto);
const alg = {
  name: 'RSASSA-PKCS1-v1_5',
  hash: 'SHA-256',
  publicExponent: new Uint8Array([1, 0, 1]),
  modulusLength: 2048,
};
const brokers = process.env.BROKER_URL ?? 'nats://broker.example.net:4222';
// how long the certificates it signs are valid (default a year): short for a renewal demo
const validityMs = Number(process.env.CERT_VALIDITY_S ?? 365 * 86400) * 1000;
const CA_WAIT_MS = 10_000;

function pemToDer(pem) {
  return Buffer.from(pem.replace(/-----(BEGIN|END)[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function generateCa(certFile, keyFile) {
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: 'CN=Example Choria CA',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 10 * 365 * 86400_000),
    keys,
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  // Written via rename so no reader ever sees a half-written file.
  const tmp = `.${process.pid}`;
  writeFileSync(keyFile + tmp, x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'), { mode: 0o600 });
  writeFileSync(certFile + tmp, cert.toString('pem') + '\n');
  renameSync(keyFile + tmp, keyFile);
  renameSync(certFile + tmp, certFile);
}

// Several helper processes (concurrent one-shot runs, or a pool) may start together on a fresh
// CA_DIR: an exclusive lock file lets exactly one create the CA while the others wait for it, so
// every certificate is signed by the key that matches the CA certificate handed out.
async function createCaOnce(certFile, keyFile) {
  mkdirSync(dirname(keyFile), { recursive: true, mode: 0o700 });
  mkdirSync(dirname(certFile), { recursive: true, mode: 0o700 });
  const lock = `${keyFile}.lock`;
  let fd;
  try {
    fd = openSync(lock, 'wx', 0o600);
  } catch (err) {
    if (err.code !== 'EEXIST') throw err;
    for (const until = Date.now() + CA_WAIT_MS; Date.now() < until; await sleep(50)) {
      if (existsSync(certFile) && existsSync(keyFile)) return;
    }
    throw new Error(`another process has been creating the CA for ${CA_WAIT_MS} ms (remove ${lock} if it died)`, {
      cause: err,
    });
  }
  try {
    if (!existsSync(certFile) || !existsSync(keyFile)) await generateCa(certFile, keyFile);
  } finally {
    closeSync(fd);
    rmSync(lock, { force: true });
  }
}

async function loadOrCreateCa() {
  const dir = process.env.CA_DIR ?? join(process.cwd(), 'example-ca');
  const certFile = process.env.CA_CERT ?? join(dir, 'ca.pem');
  const keyFile = process.env.CA_KEY ?? join(dir, 'ca-key.pem');
  if (!existsSync(certFile) || !existsSync(keyFile)) await createCaOnce(certFile, keyFile);
  const caPem = readFileSync(certFile, 'utf8');
  const caCert = new x509.X509Certificate(caPem);
  const caKey = await webcrypto.subtle.importKey('pkcs8', pemToDer(readFileSync(keyFile, 'utf8')), alg, false, [
    'sign',
  ]);
  return { caPem, caCert, caKey };
}

async function decide(req, getCa) {
  const reply = { defer: false, msg: '', certificate: '', ca: '', configuration: {} };
  reply.configuration = {
    identity: req.identity,
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': brokers,
  };
  if (req.csr && req.csr.csr) {
    try {
      const { caPem, caCert, caKey } = await getCa();
      const csr = new x509.Pkcs10CertificateRequest(req.csr.csr);
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: randomBytes(8).toString('hex'),
        subject: csr.subject,
        issuer: caCert.subject,
        notBefore: new Date(Date.now() - 60_000),
        notAfter: new Date(Date.now() + validityMs),
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
  return reply;
}

async function safely(text, getCa) {
  try {
    return await decide(JSON.parse(text), getCa);
  } catch (err) {
    return { defer: true, msg: `helper failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

function answer(reply) {
  process.stdout.write(JSON.stringify(reply) + '\n');
}

async function once() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  answer(await safely(Buffer.concat(chunks).toString('utf8'), loadOrCreateCa));
}

function lines() {
  // The CA is read once and kept; a failed load is retried on the next request.
  let ca;
  const getCa = () => {
    ca ??= loadOrCreateCa().catch((err) => {
      ca = undefined;
      throw err;
    });
    return ca;
  };
  const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
  // Signing is asynchronous: chain the answers so replies leave in request order.
  let previous = Promise.resolve();
  input.on('line', (line) => {
    if (line.trim() === '') return;
    previous = previous.then(async () => answer(await safely(line, getCa)));
  });
}

if (process.argv.includes('--lines')) lines();
else await once();

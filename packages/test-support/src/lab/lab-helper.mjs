#!/usr/bin/env node
// The interop lab's provisioning helper (the helper contract of docs/helpers.md: the request JSON
// on stdin, one reply JSON on stdout, exit 0), run by this project's provisioner and by the
// upstream one alike. Everything node-specific comes from <LAB_NODES_DIR>/<identity>/lab-node.json,
// written by the lab (servers.ts), so one helper serves every fleet and site of a run:
// - the configuration: the node's identity, its broker, x509 files, and a status file whose
//   provisioning_mode the lab reads to know the node left provisioning mode;
// - with deferRuns the first runs for a node defer;
// - with signCsr (the pki row) the node's CSR is signed with the lab CA (valid for certValidityMs),
//   and the certificate and CA go to the ssl directory the node named; otherwise the node keeps its
//   throw-away pair;
// - every run appends `<ms> <pid> <instance>` to <nodeDir>/helper.log (the lab counts helper
//   runs per node and per provisioner instance);
// - LAB_HELPER_DELAY_MS (from the provisioner's environment) makes every run wait that long
//   before it answers: a slow helper for one instance of a site (the hand-over row).
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes, webcrypto } from 'node:crypto';

const nodesDir = process.env.LAB_NODES_DIR;

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

const pemDer = (pem) => Buffer.from(pem.replace(/-----(BEGIN|END)[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');

async function signCsr(node, csrPem) {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto);
  const alg = {
    name: 'RSASSA-PKCS1-v1_5',
    hash: 'SHA-256',
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  };
  const caPem = readFileSync(node.caFile, 'utf8');
  const caCert = new x509.X509Certificate(caPem);
  const caKey = await webcrypto.subtle.importKey('pkcs8', pemDer(readFileSync(node.caKeyFile, 'utf8')), alg, false, [
    'sign',
  ]);
  const csr = new x509.Pkcs10CertificateRequest(csrPem);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: `01${randomBytes(8).toString('hex')}`,
    subject: csr.subject,
    issuer: caCert.subject,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + (node.certValidityMs ?? 7 * 86400_000)),
    publicKey: await csr.publicKey.export(alg, ['verify']),
    signingKey: caKey,
    signingAlgorithm: alg,
    extensions: [
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth, x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: node.identity }]),
    ],
  });
  return { cert: `${cert.toString('pem')}\n`, ca: caPem };
}

async function decide(req) {
  if (typeof req.identity !== 'string' || req.identity === '')
    return { defer: true, msg: 'no identity in the request' };
  if (nodesDir === undefined) return { defer: true, msg: 'LAB_NODES_DIR is not set' };
  const dir = join(nodesDir, req.identity);
  const delayMs = Number(process.env.LAB_HELPER_DELAY_MS ?? '0');
  if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
  // LAB_INSTANCE names the provisioner instance that ran us (its environment, which helpers inherit)
  appendFileSync(join(dir, 'helper.log'), `${Date.now()} ${process.pid} ${process.env.LAB_INSTANCE ?? '-'}\n`);
  const node = JSON.parse(readFileSync(join(dir, 'lab-node.json'), 'utf8'));
  // the defer row: the first deferRuns runs for a node answer "not yet"
  const runs = readFileSync(join(dir, 'helper.log'), 'utf8')
    .split('\n')
    .filter((l) => l !== '').length;
  if (runs <= (node.deferRuns ?? 0))
    return { defer: true, msg: `lab defers ${req.identity} (run ${runs} of ${node.deferRuns})` };
  const reply = {
    defer: false,
    msg: `lab configured ${req.identity}`,
    certificate: '',
    ca: '',
    ssldir: '',
    configuration: {},
    ...node.reply,
  };
  let ssl = node.presetSsl;
  if (node.signCsr) {
    if (!req.csr || !req.csr.csr) return { defer: true, msg: `no CSR from ${req.identity} (features.pki off?)` };
    const signed = await signCsr(node, req.csr.csr);
    ssl = req.csr.ssldir;
    Object.assign(reply, { certificate: signed.cert, ca: signed.ca, ssldir: ssl });
  }
  reply.configuration = {
    identity: req.identity,
    loglevel: 'info',
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': node.brokerUrls,
    // protocol v2: the seed go-choria wrote (gen25519) and the JWT the provisioner sends with configure
    ...(node.protocolV2
      ? {
          'plugin.security.provider': 'choria',
          'plugin.security.choria.token_file': join(dir, 'server.jwt'),
          'plugin.security.choria.seed_file': join(dir, 'server.seed'),
        }
      : {
          'plugin.security.provider': 'file',
          'plugin.security.file.certificate': join(ssl, 'certificate.pem'),
          'plugin.security.file.key': join(ssl, 'private.pem'),
          'plugin.security.file.ca': join(ssl, 'ca.pem'),
        }),
    'plugin.choria.status_file_path': node.statusFile,
    'plugin.choria.status_update_interval': '1',
    ...node.configuration,
  };
  return reply;
}

let reply;
try {
  reply = await decide(JSON.parse(await readStdin()));
} catch (err) {
  process.stderr.write(`lab-helper: ${err && err.stack ? err.stack : String(err)}\n`);
  reply = { defer: true, msg: `lab helper failed: ${err && err.message ? err.message : String(err)}` };
}
process.stdout.write(`${JSON.stringify(reply)}\n`);

#!/usr/bin/env node
// Example helper for Organization Issuer networks (features: jwt + ed25519): configures the node to
// use the choria security provider with the seed it generated and the server JWT the provisioner
// mints, and asks for server-JWT claims. Environment: BROKER_URL, ISSUER_PUBLIC (hex org issuer key),
// SERVER_JWT_YEARS (default 5; 0: no `exp`, the provisioner's server_jwt_validity decides). No
// dependencies.
//
// Two ways to run it:
//   ed25519-helper.mjs          one request on stdin, one reply on stdout (a process per node)
//   ed25519-helper.mjs --lines  JSON lines for `helper_mode: pool`: one request per line in, one
//                               reply line out, in order, until stdin closes
//
// Note `server_claims.exp` is an ABSOLUTE Unix time: the upstream examples send a relative number of
// seconds, which lands in the 1970s and silently falls back to the default validity.
import { createInterface } from 'node:readline';

const brokers = process.env.BROKER_URL ?? 'nats://broker.example.net:4222';
const issuer = process.env.ISSUER_PUBLIC ?? '';
const years = Number(process.env.SERVER_JWT_YEARS ?? '5');

function decide(req) {
  if (typeof req.identity !== 'string' || req.identity === '')
    return { defer: true, msg: 'no identity received in request' };
  const ed = req.ed25519_pubkey;
  if (!ed || !ed.directory) return { defer: true, msg: 'no ed25519 public key or key directory received' };
  const dir = ed.directory;
  const configuration = {
    identity: req.identity,
    loglevel: 'info',
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': brokers,
    'plugin.security.provider': 'choria',
    'plugin.security.choria.token_file': `${dir}/server.jwt`,
    'plugin.security.choria.seed_file': `${dir}/server.seed`,
    'plugin.choria.machine.store': `${dir}/machine`,
  };
  if (issuer !== '') {
    configuration['plugin.security.issuer.names'] = 'choria';
    configuration['plugin.security.issuer.choria.public'] = issuer;
  }
  return {
    defer: false,
    msg: `configured ${req.identity} for the organization issuer`,
    configuration,
    server_claims: {
      ...(years > 0 ? { exp: Math.floor(Date.now() / 1000) + Math.round(years * 365 * 86400) } : {}),
      permissions: { streams: true, submission: true },
    },
  };
}

// Never exit non-zero or print a non-reply: a failure becomes a defer, retried cleanly.
function safely(text) {
  try {
    return decide(JSON.parse(text));
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
  answer(safely(Buffer.concat(chunks).toString('utf8')));
}

function lines() {
  const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
  input.on('line', (line) => {
    if (line.trim() !== '') answer(safely(line));
  });
  // At end of input nothing is left to wait for, so the process exits 0 once stdout is flushed.
}

if (process.argv.includes('--lines')) lines();
else await once();

#!/usr/bin/env node
// A minimal Choria Provisioner helper (one process per node): reads the request JSON on stdin,
// prints one reply JSON on stdout, always exits 0. Configuration only: no CA, no policies.
// Environment: BROKER_URL (default nats://broker.example.net:4222).
//
// Rules that matter (docs/helpers.md): print nothing else on stdout (use stderr for logs, the
// provisioner logs it), only strings in `configuration`, always set
// plugin.choria.server.provision to "false", and answer soft failures with "defer": true.

const BROKER_URL = process.env.BROKER_URL || 'nats://broker.example.net:4222';

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function configure(request) {
  const identity = request.identity;
  if (typeof identity !== 'string' || identity === '') {
    return { defer: true, msg: 'no identity in the request' };
  }
  // The inventory arrives as a JSON string: parse it a second time.
  const inventory = JSON.parse(request.inventory || '{}');

  return {
    defer: false,
    msg: `configured ${identity} (Choria ${inventory.version || 'unknown version'})`,
    configuration: {
      identity,
      loglevel: 'info',
      'plugin.choria.server.provision': 'false',
      'plugin.choria.middleware_hosts': BROKER_URL,
      // Every value must be a string, also numbers.
      registerinterval: String(300),
    },
  };
}

let reply;
try {
  reply = configure(JSON.parse(await readStdin()));
} catch (err) {
  // Never exit non-zero: a failing helper is counted as an error, a defer is retried cleanly.
  console.error(`plain-helper: ${err && err.stack ? err.stack : err}`);
  reply = { defer: true, msg: `helper failed: ${err && err.message ? err.message : err}` };
}
process.stdout.write(`${JSON.stringify(reply)}\n`);

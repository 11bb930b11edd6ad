#!/usr/bin/env node
// A long-lived Choria Provisioner helper for the JSON-lines pool mode (`helper_mode: pool`):
// reads one request per line on stdin and answers each with one reply line on stdout, in order,
// until stdin closes. Expensive set-up (CA clients, CMDB connections, caches) happens once here
// instead of once per node. Environment: BROKER_URL (default nats://broker.example.net:4222).
//
// Rules: exactly one line per request, nothing else on stdout (stderr is logged), answer errors
// with "defer": true — printing something that is not JSON gets this process killed and replaced.
import { createInterface } from 'node:readline';

const BROKER_URL = process.env.BROKER_URL || 'nats://broker.example.net:4222';

async function handle(request) {
  const identity = request.identity;
  if (typeof identity !== 'string' || identity === '') return { defer: true, msg: 'no identity in the request' };
  const inventory = JSON.parse(request.inventory || '{}');
  return {
    msg: `configured ${identity} (Choria ${inventory.version || 'unknown version'}) by pool helper ${process.pid}`,
    configuration: {
      identity,
      loglevel: 'info',
      'plugin.choria.server.provision': 'false',
      'plugin.choria.middleware_hosts': BROKER_URL,
    },
  };
}

async function answer(line) {
  try {
    return await handle(JSON.parse(line));
  } catch (err) {
    console.error(`pool-helper: ${err && err.stack ? err.stack : err}`);
    return { defer: true, msg: `helper failed: ${err && err.message ? err.message : err}` };
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
// The provisioner sends the next request only after the previous answer, but keep replies in
// order even if it did not.
let previous = Promise.resolve();
lines.on('line', (line) => {
  if (line.trim() === '') return;
  previous = previous.then(async () => {
    process.stdout.write(`${JSON.stringify(await answer(line))}\n`);
  });
});
lines.on('close', () => {
  previous.then(() => process.exit(0));
});

#!/usr/bin/env node
// A Choria Provisioner helper that decides before it configures:
//   * identity matches HELPER_DENY_PATTERN (a JavaScript regular expression, e.g. "^db-legacy-")
//     -> "shutdown": true: the node stops and stays down until someone restarts it;
//   * the inventory fact `ready` is not true (e.g. cloud-init has not finished)
//     -> "defer": true: nothing changes, the node is retried on the next discovery;
//   * otherwise configure it, with action policies for the agents we expose, and one that lets the
//     provisioner's renewal identity call choria_provision#reprovision (docs/renewal.md).
// Environment: BROKER_URL (default nats://broker.example.net:4222), HELPER_DENY_PATTERN,
// RENEWER_IDENTITY (default renewals.choria).

const BROKER_URL = process.env.BROKER_URL || 'nats://broker.example.net:4222';
const RENEWER = process.env.RENEWER_IDENTITY || 'renewals.choria';
const DENY = process.env.HELPER_DENY_PATTERN ? new RegExp(process.env.HELPER_DENY_PATTERN) : undefined;

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function decide(request) {
  const identity = request.identity;
  if (typeof identity !== 'string' || identity === '') return { defer: true, msg: 'no identity in the request' };

  if (DENY && DENY.test(identity)) {
    return { shutdown: true, msg: `identity ${identity} matches the deny pattern ${DENY.source}` };
  }

  const facts = JSON.parse(request.inventory || '{}').facts || {};
  // Facts files are often YAML or shell-written JSON, so accept "true" as well as true.
  if (facts.ready !== true && facts.ready !== 'true') {
    return { defer: true, msg: `${identity} is not ready yet (fact ready=${JSON.stringify(facts.ready)})` };
  }

  return {
    msg: `configured ${identity}`,
    configuration: {
      identity,
      loglevel: 'info',
      'plugin.choria.server.provision': 'false',
      'plugin.choria.middleware_hosts': BROKER_URL,
      rpcauthorization: '1',
      rpcauthprovider: 'action_policy',
      'plugin.actionpolicy.allow_unconfigured': '0',
    },
    // File names must end in .policy; the node writes them to <config dir>/policies/.
    action_policies: {
      'rpcutil.policy': 'policy default deny\nallow\tchoria=ops.mcollective\t*\t*\t*\n',
      // the provisioner's renewals (renewal_choria_config) may send this node back to provisioning
      'choria_provision.policy': `policy default deny\nallow\tchoria=${RENEWER}\treprovision\t*\t*\n`,
    },
  };
}

let reply;
try {
  reply = decide(JSON.parse(await readStdin()));
} catch (err) {
  console.error(`policy-helper: ${err && err.stack ? err.stack : err}`);
  reply = { defer: true, msg: `helper failed: ${err && err.message ? err.message : err}` };
}
process.stdout.write(`${JSON.stringify(reply)}\n`);

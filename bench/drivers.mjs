// The two yardsticks the product is measured against, on the same fleet and broker:
//   naive  what a site would write in an afternoon from the protocol document with nats.js alone:
//          discover, then W workers, each provisioning one node after the other with the same RPCs
//          in the same order as the product (jwt when the flow has it, inventory, configure,
//          restart); no helper, no scheduling, no checks beyond the reply status.
//   limit  the same RPC sequence per node with every request built before the clock starts
//          (envelopes, payloads, reply subjects), sent over a bare nats.js connection, W nodes in
//          flight; replies are matched by subject and not decoded. What the fleet and the broker
//          allow at all on this machine.
// Neither verifies a token or runs a helper: the product/naive ratio is what the product's
// pipeline, checks and helper cost, product/limit what is left of the machine's capacity.
import { createHash, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { connect } from 'nats';
import { InsecureSigner, agentFilter, directedSubject, encodeRpcRequest, newV1RequestId, replySubjectPrefix, v1Codec } from '@choria-provisioner/core/internal';

const TOKEN = 's3cret';
const REPLY_TIMEOUT_MS = 30_000;

/** What the product's plain flow sends for one node, after the helper answered (host.ts #configure). */
function configureData(identity) {
  const configuration = {
    identity,
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': 'nats://broker.example.net:4222',
  };
  return {
    token: TOKEN,
    config: JSON.stringify(configuration),
    ca: '',
    certificate: '',
    ssldir: '',
    key: '',
    ecdh_public: '',
    action_policies: {},
    opa_policies: {},
    server_jwt: '',
  };
}

/** The RPCs of one node, in the product's order. */
export function rpcSequence(flow, identity) {
  const steps = [];
  if (flow === 'jwt') steps.push(['choria_provision', 'jwt', { token: TOKEN }]);
  steps.push(['rpcutil', 'inventory', {}]);
  steps.push(['choria_provision', 'configure', configureData(identity)]);
  steps.push(['choria_provision', 'restart', { splay: 1, token: TOKEN }]);
  return steps;
}

/** Runs `work(identity)` for every identity, `workers` at a time. */
async function forEach(identities, workers, work) {
  let next = 0;
  const worker = async () => {
    while (next < identities.length) await work(identities[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(workers, identities.length) }, worker));
}

/**
 * Replies matched by subject: Choria servers answer to the transport's reply-to header, so one
 * subscription on the reply prefix serves every request. `expect` resolves with the reply, or
 * with undefined after `timeoutMs`.
 */
function replyRouter(nc, wildcard) {
  const waiting = new Map();
  const sub = nc.subscribe(wildcard, {
    callback: (_err, msg) => {
      const done = waiting.get(msg.subject);
      if (done !== undefined) {
        waiting.delete(msg.subject);
        done(msg);
      }
    },
  });
  return {
    expect(subject, timeoutMs) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting.delete(subject);
          resolve(undefined);
        }, timeoutMs);
        waiting.set(subject, (msg) => {
          clearTimeout(timer);
          resolve(msg);
        });
      });
    },
    close: () => sub.unsubscribe(),
  };
}

/**
 * The naive client: what a site writes against the protocol document with nats.js and nothing of
 * this project: every request's three JSON layers built with JSON.stringify and published with
 * its reply-to header, each reply's layers parsed back and its status checked, one RPC after the
 * other per worker, after a discovery of its own (a broadcast, then replies until a quiet second).
 */
export async function runNaive(url, flow, workers) {
  const callerId = 'choria=bench-naive';
  const sender = 'bench-naive.example.net';
  const replyPrefix = `provisioning.reply.${createHash('md5').update(callerId).digest('hex')}`;
  const nc = await connect({ servers: url, name: 'bench-naive' });
  const replies = replyRouter(nc, `${replyPrefix}.>`);
  const transport = (agent, message, filterAgent, replyTo) => {
    const envelope = {
      requestid: randomBytes(16).toString('hex'),
      senderid: sender,
      callerid: callerId,
      collective: 'provisioning',
      agent,
      ttl: 60,
      time: Math.floor(Date.now() / 1000),
      filter: { fact: [], cf_class: [], agent: [filterAgent], identity: [], compound: [] },
    };
    const request = JSON.stringify({ protocol: 'choria:request:1', message, envelope });
    const secure = JSON.stringify({ protocol: 'choria:secure:request:1', message: request, signature: 'insecure', pubcert: 'insecure' });
    return Buffer.from(JSON.stringify({ protocol: 'choria:transport:1', data: Buffer.from(secure).toString('base64'), headers: { 'reply-to': replyTo, mc_sender: sender } }));
  };
  const decode = (msg) => {
    const outer = JSON.parse(Buffer.from(msg.data).toString());
    const secure = JSON.parse(Buffer.from(outer.data, 'base64').toString());
    const reply = JSON.parse(secure.message);
    return { sender: reply.envelope.senderid, body: reply.message };
  };
  const identities = await new Promise((resolve) => {
    const found = new Set();
    const inbox = `${replyPrefix}.discovery`;
    let quiet;
    const done = () => {
      sub.unsubscribe();
      resolve([...found]);
    };
    const sub = nc.subscribe(inbox, {
      callback: (_err, msg) => {
        found.add(decode(msg).sender);
        clearTimeout(quiet);
        quiet = setTimeout(done, 1000);
      },
    });
    nc.publish('provisioning.broadcast.agent.discovery', transport('discovery', 'cGluZw==', 'choria_provision', inbox));
    quiet = setTimeout(done, 3000);
  });
  const discoveredAt = performance.now();
  const durations = [];
  let provisioned = 0;
  let failed = 0;
  const firstErrors = [];
  await forEach(identities, workers, async (identity) => {
    const t = performance.now();
    try {
      for (const [agent, action, data] of rpcSequence(flow, identity)) {
        const replyTo = `${replyPrefix}.${randomBytes(16).toString('hex')}`;
        const answered = replies.expect(replyTo, REPLY_TIMEOUT_MS);
        nc.publish(`provisioning.node.${identity}`, transport(agent, JSON.stringify({ agent, action, data }), agent, replyTo));
        const msg = await answered;
        if (msg === undefined) throw new Error(`${agent}#${action}: no reply within ${REPLY_TIMEOUT_MS} ms`);
        const body = JSON.parse(decode(msg).body);
        if (body.statuscode !== 0) throw new Error(`${agent}#${action}: ${body.statusmsg}`);
      }
      provisioned++;
      durations.push(performance.now() - t);
    } catch (err) {
      failed++;
      if (firstErrors.length < 3) firstErrors.push(`${identity}: ${err.message}`);
    }
  });
  replies.close();
  await nc.close();
  return { discovered: identities.length, discoveredAt, provisioned, failed, durations: durations.sort((a, b) => a - b), firstErrors };
}

/**
 * Builds every request of every node (v1, unsigned: the plain and jwt flows). `identities` are
 * the simulator's, known in advance; the ttl is long enough for the requests built first.
 */
export function buildRequests(flow, identities, { sender = 'bench-limit.example.net', ttl = 3600 } = {}) {
  const callerId = 'choria=bench-limit';
  const signer = new InsecureSigner('v1', callerId);
  const prefix = replySubjectPrefix(callerId);
  const timeNs = BigInt(Date.now()) * 1_000_000n;
  const nodes = identities.map((identity) => ({
    subject: directedSubject(identity),
    steps: rpcSequence(flow, identity).map(([agent, action, data]) => {
      const id = newV1RequestId();
      const replyTo = `${prefix}${id}`;
      const payload = encodeRpcRequest(agent, action, data);
      const { transportJson } = v1Codec.encodeRequest(
        { id, sender, callerId, collective: 'provisioning', agent, ttl, timeNs, filter: agentFilter(agent), payload, replyTo },
        signer,
      );
      return { replyTo, bytes: Buffer.from(transportJson, 'utf8') };
    }),
  }));
  return { nodes, replyWildcard: `${prefix}>` };
}

/** The limit driver: pre-built requests over a bare connection, replies matched by subject. */
export async function runLimit(url, built, workers) {
  const nc = await connect({ servers: url, name: 'bench-limit' });
  const replies = replyRouter(nc, built.replyWildcard);
  await nc.flush();
  const durations = [];
  let provisioned = 0;
  let failed = 0;
  await forEach(built.nodes, workers, async (node) => {
    const t = performance.now();
    for (const step of node.steps) {
      const answered = replies.expect(step.replyTo, REPLY_TIMEOUT_MS);
      nc.publish(node.subject, step.bytes);
      if ((await answered) === undefined) {
        failed++;
        return;
      }
    }
    provisioned++;
    durations.push(performance.now() - t);
  });
  replies.close();
  await nc.close();
  return { provisioned, failed, durations: durations.sort((a, b) => a - b), firstErrors: failed > 0 ? [`${failed} nodes left a request unanswered for ${REPLY_TIMEOUT_MS / 1000} s`] : [] };
}

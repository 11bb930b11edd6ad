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
import { createHash, randomBytes, sign } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { clearTimeout, setTimeout } from 'node:timers';
import { connect } from 'nats';
import {
  ChoriaSigner,
  InsecureSigner,
  SigningKeyCache,
  agentFilter,
  directedSubject,
  encodeRpcRequest,
  mintServerToken,
  newRequestId,
  newV1RequestId,
  replySubjectPrefix,
  v1Codec,
  v2Codec,
} from '@choria-provisioner/core/internal';
import { keyFromSeed } from './lib/keys.mjs';

const TOKEN = 's3cret';
const REPLY_TIMEOUT_MS = 30_000;

/** The configuration the bench's in-process helper returns (scenario.mjs). */
function configurationFor(flow, identity) {
  return {
    identity,
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': 'nats://broker.example.net:4222',
    ...(flow === 'ed25519' ? { 'plugin.security.provider': 'choria' } : {}),
  };
}

/** What the product sends for one node, after the helper answered (host.ts #configure). */
function configureData(flow, identity, serverJwt = '') {
  const configuration = configurationFor(flow, identity);
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
    server_jwt: serverJwt,
  };
}

/**
 * The RPCs of one node, in the product's order. In the ed25519 flow configure carries a server
 * token minted for the key the node's gen25519 answered, so its data is a function of that answer.
 */
export function rpcSequence(flow, identity, mint) {
  const steps = [];
  if (flow === 'jwt' || flow === 'ed25519') steps.push(['choria_provision', 'jwt', { token: TOKEN }]);
  if (flow === 'ed25519') steps.push(['choria_provision', 'gen25519', { nonce: newRequestId(), token: TOKEN }]);
  steps.push(['rpcutil', 'inventory', {}]);
  if (flow === 'ed25519')
    steps.push([
      'choria_provision',
      'configure',
      (publicKeyHex) => configureData(flow, identity, mint(identity, publicKeyHex)),
    ]);
  else steps.push(['choria_provision', 'configure', configureData(flow, identity)]);
  steps.push(['choria_provision', 'restart', { splay: 1, token: TOKEN }]);
  return steps;
}

/**
 * Server tokens for the ed25519 flow, minted by the product's own function with its key cache in
 * both drivers: minting is work every client of this flow must do, so all three pay the same for
 * it and the comparison is about everything else.
 */
export function serverTokenMinter(keys) {
  const cache = new SigningKeyCache();
  return (identity, publicKeyHex) =>
    mintServerToken({
      identity,
      publicKeyHex,
      signingKeyPath: keys.provSeedFile,
      signingTokenPath: keys.clientJwtFile,
      defaultValidityMs: 3_600_000,
      configuration: configurationFor('ed25519', identity),
      keys: cache,
    });
}

/** Sender and body of a protocol v2 reply (transport, secure reply, reply; every layer parsed). */
function v2ReplyBody(data) {
  const outer = JSON.parse(Buffer.from(data).toString());
  const secure = JSON.parse(Buffer.from(outer.data, 'base64').toString());
  const reply = JSON.parse(Buffer.from(secure.reply, 'base64').toString());
  return { sender: reply.sender, body: Buffer.from(reply.message, 'base64').toString() };
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
export async function runNaive(url, flow, workers, keys) {
  const v2 = flow === 'ed25519';
  const sender = 'bench-naive.example.net';
  // protocol v2 (ed25519 flow): requests signed with the provisioner's seed, its client JWT as caller
  const clientJwt = v2 ? readFileSync(keys.clientJwtFile, 'utf8').trim() : '';
  const privateKey = v2 ? keyFromSeed(Buffer.from(readFileSync(keys.provSeedFile, 'utf8').trim(), 'hex')) : undefined;
  const callerId = v2
    ? JSON.parse(Buffer.from(clientJwt.split('.')[1], 'base64url').toString()).callerid
    : 'choria=bench-naive';
  const mint = v2 ? serverTokenMinter(keys) : undefined;
  const replyPrefix = `provisioning.reply.${createHash('md5').update(callerId).digest('hex')}`;
  const nc = await connect({ servers: url, name: 'bench-naive' });
  const replies = replyRouter(nc, `${replyPrefix}.>`);
  const b64 = (text) => Buffer.from(text).toString('base64');
  const filterFor = (filterAgent) => ({ fact: [], cf_class: [], agent: [filterAgent], identity: [], compound: [] });
  const transportV1 = (agent, message, filterAgent, replyTo) => {
    const envelope = {
      requestid: randomBytes(16).toString('hex'),
      senderid: sender,
      callerid: callerId,
      collective: 'provisioning',
      agent,
      ttl: 60,
      time: Math.floor(Date.now() / 1000),
      filter: filterFor(filterAgent),
    };
    const request = JSON.stringify({ protocol: 'choria:request:1', message, envelope });
    const secure = JSON.stringify({
      protocol: 'choria:secure:request:1',
      message: request,
      signature: 'insecure',
      pubcert: 'insecure',
    });
    return Buffer.from(
      JSON.stringify({
        protocol: 'choria:transport:1',
        data: b64(secure),
        headers: { 'reply-to': replyTo, mc_sender: sender },
      }),
    );
  };
  const transportV2 = (agent, message, filterAgent, replyTo) => {
    const request = JSON.stringify({
      protocol: 'io.choria.protocol.v2.request',
      message: b64(message),
      id: randomBytes(16).toString('hex'),
      sender,
      caller: callerId,
      collective: 'provisioning',
      agent,
      ttl: 60,
      time: Date.now() * 1_000_000,
      filter: filterFor(filterAgent),
    });
    const signature = sign(null, Buffer.from(request), privateKey).toString('base64');
    const secure = JSON.stringify({
      protocol: 'io.choria.protocol.v2.secure_request',
      request: b64(request),
      signature,
      caller: clientJwt,
    });
    return Buffer.from(
      JSON.stringify({
        protocol: 'io.choria.protocol.v2.transport',
        data: b64(secure),
        headers: { reply: replyTo, sender },
      }),
    );
  };
  const transport = v2 ? transportV2 : transportV1;
  const decodeV1 = (data) => {
    const outer = JSON.parse(Buffer.from(data).toString());
    const secure = JSON.parse(Buffer.from(outer.data, 'base64').toString());
    const reply = JSON.parse(secure.message);
    return { sender: reply.envelope.senderid, body: reply.message };
  };
  const decode = (msg) => (v2 ? v2ReplyBody(msg.data) : decodeV1(msg.data));
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
    // v1 carries `cGluZw==` as the message; v2 base64-encodes it once more, as transportV2 does
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
      let publicKey = '';
      for (const [agent, action, dataOrFn] of rpcSequence(flow, identity, mint)) {
        const data = typeof dataOrFn === 'function' ? dataOrFn(publicKey) : dataOrFn;
        const replyTo = `${replyPrefix}.${randomBytes(16).toString('hex')}`;
        const answered = replies.expect(replyTo, REPLY_TIMEOUT_MS);
        nc.publish(
          `provisioning.node.${identity}`,
          transport(agent, JSON.stringify({ agent, action, data }), agent, replyTo),
        );
        const msg = await answered;
        if (msg === undefined) throw new Error(`${agent}#${action}: no reply within ${REPLY_TIMEOUT_MS} ms`);
        const body = JSON.parse(decode(msg).body);
        if (body.statuscode !== 0) throw new Error(`${agent}#${action}: ${body.statusmsg}`);
        if (action === 'gen25519') publicKey = body.data.public_key;
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
  return {
    discovered: identities.length,
    discoveredAt,
    provisioned,
    failed,
    durations: durations.sort((a, b) => a - b),
    firstErrors,
  };
}

/**
 * Builds every request of every node: v1 unsigned for the plain and jwt flows, v2 signed with the
 * provisioner's seed for the ed25519 flow, where only configure is left to the run (its server
 * token needs the key the node's gen25519 answers). `identities` are the simulator's, known in
 * advance; the ttl is long enough for the requests built first.
 */
export function buildRequests(flow, identities, { sender = 'bench-limit.example.net', ttl = 3600, keys } = {}) {
  const v2 = flow === 'ed25519';
  const signer = v2
    ? ChoriaSigner.fromFiles(keys.clientJwtFile, keys.provSeedFile)
    : new InsecureSigner('v1', 'choria=bench-limit');
  const codec = v2 ? v2Codec : v1Codec;
  const mint = v2 ? serverTokenMinter(keys) : undefined;
  const prefix = replySubjectPrefix(signer.callerId);
  const timeNs = BigInt(Date.now()) * 1_000_000n;
  const encode = (agent, action, data) => {
    const id = v2 ? newRequestId() : newV1RequestId();
    const replyTo = `${prefix}${id}`;
    const payload = encodeRpcRequest(agent, action, data);
    const { transportJson } = codec.encodeRequest(
      {
        id,
        sender,
        callerId: signer.callerId,
        collective: 'provisioning',
        agent,
        ttl,
        timeNs,
        filter: agentFilter(agent),
        payload,
        replyTo,
      },
      signer,
    );
    return { replyTo, bytes: Buffer.from(transportJson, 'utf8') };
  };
  const nodes = identities.map((identity) => ({
    subject: directedSubject(identity),
    steps: rpcSequence(flow, identity, mint).map(([agent, action, data]) =>
      typeof data === 'function'
        ? { build: (publicKey) => encode(agent, action, data(publicKey)) }
        : { ...encode(agent, action, data), keyInReply: action === 'gen25519' },
    ),
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
    let publicKey = '';
    for (const prebuilt of node.steps) {
      const step = prebuilt.build === undefined ? prebuilt : prebuilt.build(publicKey);
      const answered = replies.expect(step.replyTo, REPLY_TIMEOUT_MS);
      nc.publish(node.subject, step.bytes);
      const msg = await answered;
      if (msg === undefined) {
        failed++;
        return;
      }
      // the one reply the limit decodes: the key its server token is minted for
      if (prebuilt.keyInReply) publicKey = JSON.parse(v2ReplyBody(msg.data).body).data.public_key;
    }
    provisioned++;
    durations.push(performance.now() - t);
  });
  replies.close();
  await nc.close();
  return {
    provisioned,
    failed,
    durations: durations.sort((a, b) => a - b),
    firstErrors: failed > 0 ? [`${failed} nodes left a request unanswered for ${REPLY_TIMEOUT_MS / 1000} s`] : [],
  };
}

// End-to-end against a real nats-server: a v1 fleet driven by a hand-written client.
import 'reflect-metadata';
import { createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, randomUUID, verify } from 'node:crypto';
import { Pkcs10CertificateRequest } from '@peculiar/x509';
import { jwtVerify } from 'jose';
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { readVector } from '@choria-provisioner/test-support/vectors';
import { SimulatedFleet } from '../src/fleet.js';
import { resolveFleetOptions } from '../src/options.js';
import type { FleetReport } from '../src/report.js';
import {
  collectEvents,
  eventData,
  makeServerJwt,
  rsaSignerPem,
  rsaSignerPublicPem,
  serverJwtSigner,
  type SeenEvent,
} from './support/fixtures.js';
import { encryptLegacyPem } from './support/legacy-pem.js';
import { DISCOVERY_FIELD, MiniClient } from './support/mini-client.js';
import { until } from '@choria-provisioner/test-support/wait';

const TOKEN = 's3cret';
const ids = [1, 2, 3, 4].map((i) => `v1n${i}.example.net`);
const [n1, n2, n3, n4] = ids as [string, string, string, string];

let server: RunningNatsServer;
let nc: NatsConnection;
let client: MiniClient;
let fleet: SimulatedFleet;
let events: SeenEvent[];

beforeAll(async () => {
  server = await startNatsServer({ jetstream: false });
  nc = await connect({ servers: server.url });
  client = new MiniClient(nc);
  events = collectEvents(nc);
  await nc.flush();
  fleet = await SimulatedFleet.start({
    servers: [server.url],
    name: 'v1test',
    count: 4,
    identityPattern: 'v1n{i}.example.net',
    protocol: 'v1',
    token: TOKEN,
    jwt: { signer: 'rsa', keyPem: rsaSignerPem(), update: true },
    serverJwtVerification: { signerEd25519PublicHex: serverJwtSigner().publicHex },
    facts: (i) => ({ rack: `r${i}` }),
    timeScale: 0.01,
    rsaBits: 1024,
    seed: 42,
  });
});

afterAll(async () => {
  await fleet?.stop();
  await nc?.close();
  await server?.stop();
});

const rpc = (identity: string, action: string, data: Record<string, unknown>, extra = {}, timeoutMs = 3000) =>
  client.rpc(identity, 'v1', 'choria_provision', action, data, extra, timeoutMs);
const nodeReport = (identity: string): FleetReport['nodes'][number] => {
  const r = fleet.report({ identities: [identity] }).nodes[0];
  if (r === undefined) throw new Error(`no report for ${identity}`);
  return r;
};
const kinds = (identity: string): string[] => nodeReport(identity).violations.map((v) => v.kind);

describe('v1 simulated fleet', () => {
  it('publishes a CloudEvents startup event per node on boot', async () => {
    await until(
      'startup events',
      () => events.filter((e) => e.subject === 'choria.lifecycle.event.startup.provision_mode_server').length >= 4,
      5000,
    );
    const startup = events.find((e) => e.subject === 'choria.lifecycle.event.startup.provision_mode_server');
    expect(startup?.event).toMatchObject({
      specversion: '1.0',
      source: 'io.choria.lifecycle',
      type: 'io.choria.lifecycle.v1.startup',
      datacontenttype: 'application/json',
    });
    expect(eventData(startup as SeenEvent)).toMatchObject({
      protocol: 'io.choria.lifecycle.v1.startup',
      component: 'provision_mode_server',
      version: '0.29.4',
    });
    expect(fleet.countByState().waiting).toBe(4);
  });

  it('answers discovery only when the payload decodes to ping', async () => {
    const replies = await client.discover('v1', DISCOVERY_FIELD.v1, 1500, 4);
    expect(replies.map((r) => r.sender).sort()).toEqual(ids);
    expect(
      replies.every((r) => r.hashOk && r.body === 'pong' && r.agent === 'discovery' && r.transportSender === r.sender),
    ).toBe(true);

    const before = fleet.violationCount('discovery-payload');
    expect(await client.discover('v1', 'ping', 400)).toHaveLength(0);
    expect(fleet.violationCount('discovery-payload')).toBe(before + 1);

    // a v2 discovery reaches nobody in an all-v1 fleet and is recorded once
    expect(await client.discover('v2', DISCOVERY_FIELD.v2, 400)).toHaveLength(0);
    expect(fleet.summary().fleetViolations.some((v) => v.kind === 'protocol-version')).toBe(true);
  });

  it('answers rpcutil#inventory', async () => {
    const { reply, raw } = await client.rpc(n1, 'v1', 'rpcutil', 'inventory', {});
    expect(raw?.hashOk).toBe(true);
    expect(reply).toMatchObject({ action: 'inventory', statuscode: 0, statusmsg: 'OK' });
    expect(reply?.data).toMatchObject({
      collectives: ['provisioning'],
      main_collective: 'provisioning',
      version: '0.29.4',
      upgradable: true,
      machines: [],
      facts: { rack: 'r0' },
    });
    expect(reply?.data['agents']).toContain('choria_provision');
  });

  it('provisions a node: jwt, gen25519, gencsr, configure (key + server JWT), restart', async () => {
    // jwt
    const jwt = await rpc(n1, 'jwt', { token: TOKEN });
    expect(jwt.reply?.statuscode).toBe(0);
    const jwtText = String(jwt.reply?.data['jwt']);
    expect(jwtText.endsWith('\n')).toBe(true);
    const verified = await jwtVerify(jwtText.trim(), createPublicKey(rsaSignerPublicPem()), { algorithms: ['RS256'] });
    expect(verified.protectedHeader).toEqual({ alg: 'RS256', typ: 'JWT' });
    expect(verified.payload).toMatchObject({
      cht: TOKEN,
      chs: false,
      purpose: 'choria_provisioning',
      sub: 'choria_provisioning',
      ou: 'choria',
      update: true,
      extensions: null,
    });
    expect(verified.payload['v2']).toBeUndefined();
    expect(verified.payload['chu']).toBe(server.url);
    const ecdhPublic = String(jwt.reply?.data['ecdh_public']);
    expect(ecdhPublic).toMatch(/^[0-9a-f]{64}$/);

    // gen25519
    const nonce = randomUUID().replaceAll('-', '');
    const gen = await rpc(n1, 'gen25519', { nonce, token: TOKEN });
    expect(gen.reply?.statuscode).toBe(0);
    const pub = String(gen.reply?.data['public_key']);
    const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(pub, 'hex')]);
    expect(
      verify(
        null,
        Buffer.from(nonce),
        createPublicKey({ key: spki, format: 'der', type: 'spki' }),
        Buffer.from(String(gen.reply?.data['signature']), 'hex'),
      ),
    ).toBe(true);
    expect(gen.reply?.data['directory']).toBe('/etc/choria');

    // gencsr
    const csr = await rpc(n1, 'gencsr', { cn: n1, token: TOKEN });
    expect(csr.reply?.statuscode).toBe(0);
    const parsed = new Pkcs10CertificateRequest(String(csr.reply?.data['csr']));
    expect(parsed.subjectName.getField('CN')).toEqual([n1]);
    expect(await parsed.verify()).toBe(true);
    const pk = String(csr.reply?.data['public_key']);
    expect(pk.startsWith('-----BEGIN PUBLIC KEY-----\n')).toBe(true);
    const pkDer = Buffer.from(pk.replace(/-----[A-Z ]+-----|\n/g, ''), 'base64');
    expect(createPublicKey({ key: pkDer, format: 'der', type: 'pkcs1' }).asymmetricKeyType).toBe('rsa');
    expect(csr.reply?.data['ssldir']).toBe('/etc/choria/ssl');

    // configure with an encrypted private key and a server JWT
    const mine = generateKeyPairSync('x25519');
    const minePub = mine.publicKey.export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
    const nodeKey = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b656e032100', 'hex'), Buffer.from(ecdhPublic, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    const secret = diffieHellman({ privateKey: mine.privateKey, publicKey: nodeKey });
    const der = createPrivateKey(readVector('crypto', 'jwt-signer.pem')).export({ format: 'der', type: 'pkcs1' });
    const serverJwt = await makeServerJwt(n1, pub, serverJwtSigner().seedHex);
    const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const configure = await rpc(n1, 'configure', {
      token: TOKEN,
      config: JSON.stringify({ 'plugin.choria.server.provision': 'false', identity: n1 }),
      certificate: cert,
      ca: cert,
      ssldir: '/etc/choria/ssl',
      key: encryptLegacyPem(der, secret),
      ecdh_public: minePub,
      action_policies: { 'default.policy': 'policy default deny' },
      opa_policies: {},
      server_jwt: serverJwt,
    });
    expect(configure.reply).toMatchObject({
      statuscode: 0,
      data: { message: 'Wrote 3 lines to /etc/choria/server.conf' },
    });
    let r = nodeReport(n1);
    expect(r.configuration).toEqual({ 'plugin.choria.server.provision': 'false', identity: n1 });
    expect(r.hasCertificate).toBe(true);
    expect(r.hasPrivateKey).toBe(true);
    expect(r.serverJwtClaims).toMatchObject({ identity: n1, purpose: 'choria_server', public_key: pub });
    expect(r.policies).toEqual({ action: ['default.policy'], opa: [] });
    expect(r.violations).toEqual([]);
    await until(
      'provisioned event',
      () =>
        events.some(
          (e) =>
            e.subject === 'choria.lifecycle.event.provisioned.provision_mode_server' && eventData(e)['identity'] === n1,
        ),
      2000,
    );

    // restart leaves provisioning mode
    const restart = await rpc(n1, 'restart', { splay: 1, token: TOKEN });
    expect(restart.reply).toMatchObject({ statuscode: 0, data: { message: 'Restarting Choria Server after 2s' } });
    await fleet.waitFor((f) => f.node(n1)?.lifecycle === 'provisioned', 3000, `${n1} provisioned`);
    // the node's events travel through the broker: wait for the last one before checking the order
    await until(
      'startup event of the restarted node',
      () =>
        events.some((e) => e.subject === 'choria.lifecycle.event.startup.server' && eventData(e)['identity'] === n1),
      2000,
    );
    const mineEvents = events.filter((e) => eventData(e)['identity'] === n1).map((e) => e.subject);
    const shutdownAt = mineEvents.indexOf('choria.lifecycle.event.shutdown.provision_mode_server');
    const startupAt = mineEvents.indexOf('choria.lifecycle.event.startup.server');
    expect(shutdownAt).toBeGreaterThan(-1);
    expect(startupAt).toBeGreaterThan(shutdownAt);

    // it no longer answers, and a second configure is recorded
    const again = await rpc(n1, 'configure', { token: TOKEN, config: '{"a":"b"}' }, {}, 300);
    expect(again.reply).toBeUndefined();
    await until('configured-twice violation', () => kinds(n1).includes('configured-twice'), 1000);
    r = nodeReport(n1);
    expect(r).toMatchObject({ state: 'provisioned', configuredCount: 1, restartCount: 1 });
    expect(r.rpcCounts).toMatchObject({
      'choria_provision#jwt': 1,
      'choria_provision#gen25519': 1,
      'choria_provision#gencsr': 1,
      'choria_provision#configure': 1,
      'choria_provision#restart': 1,
    });
  });

  it('rejects and records what a real server rejects', async () => {
    const bad = await rpc(n2, 'jwt', { token: 'wrong' });
    expect(bad.reply).toMatchObject({ statuscode: 1, statusmsg: 'Incorrect provision token supplied' });

    expect((await client.rpc(n2, 'v1', 'rpcutil', 'inventory', {}, { requestId: 'short' }, 300)).reply).toBeUndefined();
    expect((await client.rpc(n2, 'v1', 'rpcutil', 'inventory', {}, { ttl: 10 }, 300)).reply).toBeUndefined();
    expect(
      (await client.rpc(n2, 'v1', 'rpcutil', 'inventory', {}, { collective: 'mcollective' }, 300)).reply,
    ).toBeUndefined();
    expect(
      (await client.rpc(n2, 'v1', 'rpcutil', 'inventory', {}, { timeSec: Math.floor(Date.now() / 1000) - 600 }, 300))
        .reply,
    ).toBeUndefined();
    expect((await client.rpc(n2, 'v2', 'rpcutil', 'inventory', {}, {}, 300)).reply).toBeUndefined();
    expect((await client.rpc(n2, 'v1', 'rpcutil', 'inventory', {}, { replyTo: null }, 300)).reply).toBeUndefined();

    // the lock: the first sender holds it, a second one is refused
    expect((await rpc(n2, 'jwt', { token: TOKEN })).reply?.statuscode).toBe(0);
    const other = await rpc(n2, 'jwt', { token: TOKEN }, { senderId: 'other.example.net' });
    expect(other.reply).toMatchObject({ statuscode: 1, statusmsg: 'Could not obtain provisioning lock' });

    const splay = await rpc(n2, 'restart', { splay: 1.5, token: TOKEN });
    expect(splay.reply).toMatchObject({
      statuscode: 4,
      statusmsg:
        'Could not parse request data for choria_provision#restart: json: cannot unmarshal number 1.5 into Go struct field RestartRequest.splay of type int',
    });
    const early = await rpc(n2, 'restart', { splay: 1, token: TOKEN });
    expect(early.reply).toMatchObject({
      statuscode: 1,
      statusmsg: 'Configuration /etc/choria/server.conf enables provisioning, restart cannot continue',
    });

    const empty = await rpc(n2, 'configure', { token: TOKEN, config: '' });
    expect(empty.reply).toMatchObject({
      statuscode: 1,
      statusmsg: 'Did not receive any configuration to write, cannot write a empty configuration file',
    });
    const numbers = await rpc(n2, 'configure', { token: TOKEN, config: '{"loglevel":1}' });
    expect(numbers.reply).toMatchObject({
      statuscode: 1,
      statusmsg: 'Could not decode configuration data: json: cannot unmarshal number into Go value of type string',
    });
    const cert = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const plainKey = await rpc(n2, 'configure', {
      token: TOKEN,
      config: '{"a":"b"}',
      certificate: cert,
      ca: cert,
      ssldir: '/etc/choria/ssl',
      key: readVector('crypto', 'jwt-signer.pem'),
      ecdh_public: 'c25fab933b16b2a4589e2c2d297669b818c82881f2f9bfd08cb8fd298924a41b',
    });
    expect(plainKey.reply).toMatchObject({
      statuscode: 1,
      statusmsg: 'TLS Setup Failed: could not decrypt private key: key is not encrypted',
    });
    const unknown = await rpc(n2, 'frobnicate', { token: TOKEN });
    expect(unknown.reply).toMatchObject({
      statuscode: 2,
      statusmsg: 'Unknown action frobnicate for agent choria_provision',
    });

    await until('reply-subject violation', () => kinds(n2).includes('reply-subject'), 1000);
    const seen = new Set(kinds(n2));
    for (const k of [
      'bad-token',
      'schema',
      'collective',
      'ttl-expired',
      'protocol-version',
      'reply-subject',
      'lock-held',
      'bad-input',
      'restart-refused',
      'empty-config',
      'config-not-strings',
      'key-not-encrypted',
      'unknown-action',
    ]) {
      expect(seen, k).toContain(k);
    }
    expect(nodeReport(n2).violations.filter((v) => v.kind === 'schema')).toHaveLength(2);
    expect(nodeReport(n2).state).toBe('waiting');
  });

  it('applies release_update: new version, upgraded and startup events, back in provisioning mode', async () => {
    const up = await rpc(n3, 'release_update', {
      token: TOKEN,
      repository: 'https://repo.example.net/choria',
      version: '0.30.0',
    });
    expect(up.reply).toMatchObject({ statuscode: 0, data: { message: 'Restarting Choria Server after 2s' } });
    await until(
      'startup event with the new version',
      () =>
        events.some(
          (e) =>
            e.subject === 'choria.lifecycle.event.startup.provision_mode_server' &&
            eventData(e)['identity'] === n3 &&
            eventData(e)['version'] === '0.30.0',
        ),
      3000,
    );
    const upgraded = events.find(
      (e) => e.subject === 'choria.lifecycle.event.upgraded.provision_mode_server' && eventData(e)['identity'] === n3,
    );
    expect(eventData(upgraded as SeenEvent)).toMatchObject({ version: '0.29.4', new_version: '0.30.0' });
    await fleet.waitFor((f) => f.node(n3)?.lifecycle === 'waiting', 2000, `${n3} waiting`);
    const inv = await client.rpc(n3, 'v1', 'rpcutil', 'inventory', {});
    expect(inv.reply?.data['version']).toBe('0.30.0');
    expect(nodeReport(n3)).toMatchObject({ updateCount: 1, version: '0.30.0', state: 'waiting' });
  });

  it('shuts a node down and records requests sent afterwards', async () => {
    const down = await rpc(n4, 'shutdown', { token: TOKEN });
    expect(String(down.reply?.data['message'])).toMatch(/^Shutting Choria Server down after [0-9]s$/);
    await fleet.waitFor((f) => f.node(n4)?.lifecycle === 'shutdown', 2000, `${n4} shut down`);
    expect((await client.rpc(n4, 'v1', 'rpcutil', 'inventory', {}, {}, 300)).reply).toBeUndefined();
    await until('after-shutdown violation', () => kinds(n4).includes('after-shutdown'), 1000);
    expect(nodeReport(n4).shutdownCount).toBe(1);
  });

  it('reports over the control subject', async () => {
    const summary = JSON.parse(
      Buffer.from(
        (await nc.request('choria.simulator.v1test.report', '{"summary":true}', { timeout: 2000 })).data,
      ).toString(),
    ) as FleetReport;
    expect(summary.totals.nodes).toBe(4);
    expect(summary.totals.byState).toMatchObject({ provisioned: 1, shutdown: 1, waiting: 2 });
    expect(summary.totals.violationsByKind['lock-held']).toBe(1);
    expect(summary.totals.rpcCounts['rpcutil#inventory']).toBeGreaterThanOrEqual(2);
    expect((summary as Partial<FleetReport>).nodes).toBeUndefined();
    const full = JSON.parse(
      Buffer.from((await nc.request('choria.simulator.v1test.report', '', { timeout: 2000 })).data).toString(),
    ) as FleetReport;
    expect(full.nodes.map((n) => n.identity)).toEqual(ids);
    expect(full.nodes[0]).toMatchObject({ identity: n1, protocol: 'v1', state: 'provisioned' });
    const page = JSON.parse(
      Buffer.from(
        (await nc.request('choria.simulator.v1test.report', '{"offset":1,"limit":2}', { timeout: 2000 })).data,
      ).toString(),
    ) as FleetReport;
    expect(page.nodes.map((n) => n.identity)).toEqual([n2, n3]);
  });
});

describe('the configuration file a node boots with decides how go-choria refuses an early restart', () => {
  it('provisioning-mode file: "enables provisioning"; no file: "could not be parsed ... no such file"; after configure both restart', async () => {
    const f = await SimulatedFleet.start({
      servers: [server.url],
      name: 'cfgtest',
      count: 2,
      identityPattern: 'cf{i}.example.net',
      token: TOKEN,
      timeScale: 0.01,
      configFile: (i) => (i === 0 ? 'provisioning' : 'missing'),
      control: false,
    });
    try {
      await f.waitForBooted(5000);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(f.report().totals.longestWaitingMs).toBeGreaterThan(0);
      const early = async (identity: string) => (await rpc(identity, 'restart', { splay: 1, token: TOKEN })).reply;
      expect(await early('cf1.example.net')).toMatchObject({
        statuscode: 1,
        statusmsg: 'Configuration /etc/choria/server.conf enables provisioning, restart cannot continue',
      });
      expect(await early('cf2.example.net')).toMatchObject({
        statuscode: 1,
        statusmsg:
          'Configuration /etc/choria/server.conf could not be parsed, restart cannot continue: open /etc/choria/server.conf: no such file or directory',
      });
      for (const identity of ['cf1.example.net', 'cf2.example.net']) {
        expect(
          (await rpc(identity, 'configure', { token: TOKEN, config: '{"plugin.choria.server.provision":"false"}' }))
            .reply?.statuscode,
        ).toBe(0);
        expect((await early(identity))?.statuscode, identity).toBe(0);
      }
      expect(f.report().totals.violationsByKind['restart-refused']).toBe(2);
      // how long nodes wait in provisioning mode: a stuck node shows in longestWaitingMs
      await f.waitForState('provisioned', 2, 5000);
      const r = f.report();
      expect(r.nodes.every((n) => n.waitingForMs === 0 && n.longestWaitMs > 0)).toBe(true);
      expect(r.totals.longestWaitingMs).toBe(0);
      expect(r.totals.longestWaitMs).toBe(Math.max(...r.nodes.map((n) => n.longestWaitMs)));
    } finally {
      await f.stop();
    }
  });

  it('refuses an unknown configFile kind', () => {
    expect(() =>
      resolveFleetOptions({ servers: ['nats://127.0.0.1:1'], count: 1, configFile: 'absent' as 'missing' }),
    ).toThrow(/configFile: absent is not provisioning or missing/);
  });
});

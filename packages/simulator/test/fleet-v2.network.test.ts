// End-to-end against a real nats-server: v2 and mixed fleets, and the behaviour knobs.
import { randomUUID, verify } from 'node:crypto';
import 'reflect-metadata';
import { Pkcs10CertificateRequest } from '@peculiar/x509';
import { jwtVerify } from 'jose';
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { SimulatedFleet } from '../src/fleet.js';
import {
  collectEvents,
  edProvisioningPublic,
  edProvisioningSeed,
  ed25519Public,
  eventData,
  makeServerJwt,
  serverJwtSigner,
  type SeenEvent,
} from './support/fixtures.js';
import { DISCOVERY_FIELD, MiniClient } from './support/mini-client.js';
import { until } from '@choria-provisioner/test-support/wait';

let server: RunningNatsServer;
let nc: NatsConnection;
let client: MiniClient;
let events: SeenEvent[];

beforeAll(async () => {
  server = await startNatsServer({ jetstream: false });
  nc = await connect({ servers: server.url });
  client = new MiniClient(nc);
  events = collectEvents(nc);
  await nc.flush();
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

describe('v2 simulated fleet', () => {
  let fleet: SimulatedFleet;
  beforeAll(async () => {
    fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'v2test',
      count: 2,
      identityPattern: 'v2n{i}.example.net',
      protocol: 'v2',
      jwt: { signer: 'ed25519', seedHex: edProvisioningSeed(), ou: 'acme', extensions: { site: 'lon' }, update: true },
      rsaBits: 1024,
      serverJwtVerification: { signerEd25519PublicHex: serverJwtSigner().publicHex },
      eventFormat: 'choria',
      timeScale: 0.01,
      seed: 7,
    });
  });
  afterAll(async () => fleet?.stop());

  it('answers v2 discovery with a double base64 ping only', async () => {
    const replies = await client.discover('v2', DISCOVERY_FIELD.v2, 1500, 2);
    expect(replies.map((r) => r.sender).sort()).toEqual(['v2n1.example.net', 'v2n2.example.net']);
    expect(replies.every((r) => r.version === 'v2' && r.hashOk && r.body === 'pong')).toBe(true);
    expect(await client.discover('v2', DISCOVERY_FIELD.v1, 400)).toHaveLength(0);
    expect(fleet.violationCount('discovery-payload')).toBe(1);
  });

  it('publishes Choria-format events when asked to', () => {
    const e = events.find(
      (x) =>
        x.subject === 'choria.lifecycle.event.startup.provision_mode_server' &&
        x.event['identity'] === 'v2n1.example.net',
    );
    expect(e?.event).toMatchObject({
      protocol: 'io.choria.lifecycle.v1.startup',
      component: 'provision_mode_server',
      version: '0.29.4',
    });
    expect(e?.event['specversion']).toBeUndefined();
  });

  it('provisions a v2 node and drops v1 requests to it', async () => {
    const id = 'v2n1.example.net';
    const jwt = await client.rpc(id, 'v2', 'choria_provision', 'jwt', { token: 'anything goes' });
    expect(jwt.raw?.hashOk).toBe(true);
    const text = String(jwt.reply?.data['jwt']).trim();
    const { payload } = await jwtVerify(text, ed25519Public(edProvisioningPublic()), { algorithms: ['EdDSA'] });
    expect(payload).toMatchObject({
      v2: true,
      ou: 'acme',
      extensions: { site: 'lon' },
      cht: '',
      purpose: 'choria_provisioning',
    });

    const nonce = randomUUID().replaceAll('-', '');
    const gen = await client.rpc(id, 'v2', 'choria_provision', 'gen25519', { nonce, token: '' });
    const pub = String(gen.reply?.data['public_key']);
    expect(
      verify(null, Buffer.from(nonce), ed25519Public(pub), Buffer.from(String(gen.reply?.data['signature']), 'hex')),
    ).toBe(true);

    const serverJwt = await makeServerJwt(id, pub, serverJwtSigner().seedHex);
    const conf = await client.rpc(id, 'v2', 'choria_provision', 'configure', {
      config: '{"plugin.choria.server.provision":"0"}',
      server_jwt: serverJwt,
    });
    expect(conf.reply).toMatchObject({ statuscode: 0, data: { message: 'Wrote 2 lines to /etc/choria/server.conf' } });

    expect((await client.rpc(id, 'v1', 'rpcutil', 'inventory', {}, {}, 300)).reply).toBeUndefined();
    expect(fleet.node(id)?.violations.count('protocol-version')).toBe(1);

    const restart = await client.rpc(id, 'v2', 'choria_provision', 'restart', { splay: 1 });
    expect(restart.reply?.data['message']).toBe('Restarting Choria Server after 2s');
    await fleet.waitFor((f) => f.node(id)?.lifecycle === 'provisioned', 3000, 'provisioned');
    await until(
      'startup event of the normal server',
      () =>
        events.some((e) => e.subject === 'choria.lifecycle.event.startup.server' && eventData(e)['identity'] === id),
      2000,
    );
    expect(fleet.report({ identities: [id] }).nodes[0]?.violations).toEqual([
      {
        kind: 'protocol-version',
        detail: expect.stringContaining('v1 request') as unknown,
        at: expect.any(String) as unknown,
      },
    ]);
  });

  it('records a server JWT for another node key as invalid', async () => {
    const id = 'v2n2.example.net';
    await client.rpc(id, 'v2', 'choria_provision', 'gen25519', { nonce: 'abc' });
    const wrongKey = serverJwtSigner().publicHex;
    const serverJwt = await makeServerJwt(id, wrongKey, serverJwtSigner().seedHex);
    const conf = await client.rpc(id, 'v2', 'choria_provision', 'configure', {
      config: '{"x":"y"}',
      server_jwt: serverJwt,
    });
    expect(conf.reply?.statuscode).toBe(0); // a real node writes the file and fails later
    expect(fleet.node(id)?.violations.entries.map((v) => v.detail)).toContain(
      "public_key is not the key from the node's last gen25519",
    );
  });
  it('runs gencsr, release_update and shutdown in v2', async () => {
    const id = 'v2n2.example.net';
    const csr = await client.rpc(id, 'v2', 'choria_provision', 'gencsr', { token: '' });
    expect(csr.reply?.statuscode).toBe(0);
    expect(new Pkcs10CertificateRequest(String(csr.reply?.data['csr'])).subjectName.getField('CN')).toEqual([id]);

    const up = await client.rpc(id, 'v2', 'choria_provision', 'release_update', {
      repository: 'http://repo.example.net',
      version: '0.31.0',
    });
    expect(up.reply?.data['message']).toBe('Restarting Choria Server after 2s');
    expect(fleet.node(id)?.lifecycle).toBe('upgrading');
    await fleet.waitFor((f) => f.node(id)?.lifecycle === 'waiting', 2000, 'back in provisioning mode');
    const inv = await client.rpc(id, 'v2', 'rpcutil', 'inventory', {});
    expect(inv.reply?.data).toMatchObject({ version: '0.31.0', upgradable: true });

    const down = await client.rpc(id, 'v2', 'choria_provision', 'shutdown', {});
    expect(String(down.reply?.data['message'])).toMatch(/^Shutting Choria Server down after \ds$/);
    await fleet.waitFor((f) => f.node(id)?.lifecycle === 'shutdown', 2000, 'shut down');
    expect(fleet.report({ identities: [id] }).nodes[0]).toMatchObject({
      updateCount: 1,
      shutdownCount: 1,
      version: '0.31.0',
      hasPrivateKey: true,
    });
  });
});

describe('mixed fleet', () => {
  it('answers each protocol version with its own nodes and ignores the other silently', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'mixed',
      count: 4,
      identityPattern: 'm{i}',
      protocol: 'mixed',
      seed: 1,
    });
    try {
      const v1 = await client.discover('v1', DISCOVERY_FIELD.v1, 1000, 2);
      const v2 = await client.discover('v2', DISCOVERY_FIELD.v2, 1000, 2);
      expect(v1.map((r) => r.sender).sort()).toEqual(['m1', 'm3']);
      expect(v2.map((r) => r.sender).sort()).toEqual(['m2', 'm4']);
      expect(fleet.violationCount()).toBe(0);
    } finally {
      await fleet.stop();
    }
  });
});

describe('behaviour knobs', () => {
  it('silent nodes never reply, vanishing nodes disappear after a locked RPC, latency delays replies', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'knobs',
      count: 4,
      identityPattern: 'k{i}',
      silentNodes: 1,
      vanishRate: 0.25,
      latencyMs: 150,
      seed: 3,
      nodesPerConnection: 2,
    });
    try {
      expect(fleet.countByState()).toMatchObject({ silent: 1, waiting: 3 });
      const started = Date.now();
      const replies = await client.discover('v1', DISCOVERY_FIELD.v1, 1500, 3);
      expect(replies).toHaveLength(3);
      expect(Date.now() - started).toBeGreaterThanOrEqual(150);
      const silent = fleet.nodes.find((n) => n.lifecycle === 'silent');
      expect(replies.map((r) => r.sender)).not.toContain(silent?.identity);

      const vanishing = fleet.nodes.find((n) => n.settings.vanishAfterLockedRpc);
      expect(vanishing).toBeDefined();
      const id = vanishing?.identity ?? '';
      expect((await client.rpc(id, 'v1', 'choria_provision', 'jwt', {})).reply?.statuscode).toBe(1); // no provisioning JWT
      await fleet.waitFor((f) => f.node(id)?.lifecycle === 'vanished', 1000, 'vanished');
      expect((await client.rpc(id, 'v1', 'rpcutil', 'inventory', {}, {}, 400)).reply).toBeUndefined();
      expect(fleet.summary().totals.byState).toMatchObject({ silent: 1, vanished: 1, waiting: 2 });
    } finally {
      await fleet.stop();
    }
  });

  it('expires the provisioning lock after lockMs; a negative splay crashes the node without a reply', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'lock',
      count: 1,
      identityPattern: 'l{i}',
      lockMs: 1000,
      timeScale: 0.01,
      seed: 2,
    });
    try {
      expect((await client.rpc('l1', 'v1', 'choria_provision', 'gen25519', { nonce: 'a' })).reply?.statuscode).toBe(0);
      const refused = await client.rpc(
        'l1',
        'v1',
        'choria_provision',
        'gen25519',
        { nonce: 'n' },
        { senderId: 'b.example.net' },
      );
      expect(refused.reply?.statusmsg).toBe('Could not obtain provisioning lock');
      await new Promise((r) => setTimeout(r, 1100));
      const taken = await client.rpc(
        'l1',
        'v1',
        'choria_provision',
        'gen25519',
        { nonce: 'n' },
        { senderId: 'b.example.net' },
      );
      expect(taken.reply?.statuscode).toBe(0);

      await client.rpc(
        'l1',
        'v1',
        'choria_provision',
        'configure',
        { config: '{"plugin.choria.server.provision":"no"}' },
        { senderId: 'b.example.net' },
      );
      const crash = await client.rpc('l1', 'v1', 'choria_provision', 'restart', { splay: -1 }, {}, 300);
      expect(crash.reply).toBeUndefined();
      expect(
        fleet.node('l1')?.violations.entries.some((v) => v.kind === 'bad-input' && v.detail.includes('crashes')),
      ).toBe(true);
      // the crashed process comes back in provisioning mode, its lock forgotten
      await until('reboot after the crash', () => fleet.node('l1')?.state.pendingExit === undefined, 1000);
      expect(
        (await client.rpc('l1', 'v1', 'choria_provision', 'jwt', {}, { senderId: 'c.example.net' })).reply?.statusmsg,
      ).toBe('No Provisioning JWT file has been configured');
    } finally {
      await fleet.stop();
    }
  });

  it('an older release behaves like it: no gen25519 before 0.25.0, no provisioning lock before 0.29.0', async () => {
    const versions = ['0.24.1', '0.28.2', '0.29.0', 'development'];
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'releases',
      count: 4,
      identityPattern: 'r{i}',
      version: (i) => versions[i] ?? '',
      timeScale: 0.01,
      seed: 9,
    });
    try {
      const gen = (id: string, senderId?: string) =>
        client.rpc(
          id,
          'v1',
          'choria_provision',
          'gen25519',
          { nonce: 'n' },
          senderId === undefined ? {} : { senderId },
        );
      expect((await gen('r1')).reply).toMatchObject({
        statuscode: 2,
        statusmsg: 'Unknown action gen25519 for agent choria_provision',
      });
      for (const id of ['r2', 'r3', 'r4']) expect((await gen(id)).reply?.statuscode, id).toBe(0);
      // a second provisioner: 0.28 has no lock to refuse it, 0.29 and a development build do
      expect((await gen('r2', 'b.example.net')).reply?.statuscode).toBe(0);
      expect((await gen('r3', 'b.example.net')).reply?.statusmsg).toBe('Could not obtain provisioning lock');
      expect((await gen('r4', 'b.example.net')).reply?.statusmsg).toBe('Could not obtain provisioning lock');
      // asking an old node for what it lacks is no protocol mistake
      expect(fleet.summary().totals.violationsByKind['unknown-action']).toBeUndefined();
    } finally {
      await fleet.stop();
    }
  });

  it('answers nothing from choria_provision while a restart is pending, and records every directed request then', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'pending',
      count: 1,
      identityPattern: 'p{i}',
      seed: 6,
    });
    try {
      await client.rpc('p1', 'v1', 'choria_provision', 'configure', {
        config: '{"plugin.choria.server.provision":"false"}',
      });
      expect((await client.rpc('p1', 'v1', 'choria_provision', 'restart', { splay: 1 })).reply?.statuscode).toBe(0);
      expect(
        (await client.rpc('p1', 'v1', 'choria_provision', 'configure', { config: '{"a":"b"}' }, {}, 300)).reply,
      ).toBeUndefined();
      expect((await client.rpc('p1', 'v1', 'choria_provision', 'jwt', {}, {}, 300)).reply).toBeUndefined();
      expect((await client.rpc('p1', 'v1', 'rpcutil', 'inventory', {})).reply?.statuscode).toBe(0);
      // configure is recorded by the agent; every other directed request is after-restart
      expect(fleet.node('p1')?.violations.entries.map((v) => v.kind)).toEqual([
        'configure-after-restart',
        'after-restart',
        'after-restart',
      ]);
      expect(fleet.node('p1')?.violations.entries[2]?.detail).toMatch(
        /^rpcutil#inventory request \S+ sent after restart was accepted$/,
      );
      expect(fleet.node('p1')?.lifecycle).toBe('waiting');
    } finally {
      await fleet.stop();
    }
  });

  it('lostReplies: the action is carried out, its reply never sent', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'lost',
      count: 1,
      identityPattern: 'lr{i}',
      lostReplies: { nodes: 1, actions: ['restart'] },
      timeScale: 0.01,
      seed: 8,
    });
    try {
      expect(
        (
          await client.rpc('lr1', 'v1', 'choria_provision', 'configure', {
            config: '{"plugin.choria.server.provision":"false"}',
          })
        ).reply?.statuscode,
      ).toBe(0);
      expect(
        (await client.rpc('lr1', 'v1', 'choria_provision', 'restart', { splay: 1 }, {}, 500)).reply,
      ).toBeUndefined();
      await until('the restart', () => fleet.node('lr1')?.lifecycle === 'provisioned', 2000);
      const n = fleet.report().nodes[0];
      expect(n).toMatchObject({ restartCount: 1, configuredCount: 1, violationCount: 0 });
      expect(n?.stats.repliesLost).toBe(1);
    } finally {
      await fleet.stop();
    }
  });

  it('replyHook: a dropped reply is withheld, the action still done', async () => {
    const seen: string[] = [];
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'hook',
      count: 1,
      identityPattern: 'rh{i}',
      replyHook: ({ identity, action }) => {
        seen.push(`${identity} ${action}`);
        return action === 'configure' ? 'drop' : 'send';
      },
      seed: 9,
    });
    try {
      expect(
        (await client.rpc('rh1', 'v1', 'choria_provision', 'configure', { config: '{"a":"b"}' }, {}, 500)).reply,
      ).toBeUndefined();
      expect(fleet.node('rh1')?.state.configuredCount).toBe(1);
      // only successful choria_provision replies reach the hook
      expect((await client.rpc('rh1', 'v1', 'choria_provision', 'configure', {}, {}, 500)).reply?.statuscode).toBe(1);
      expect(seen).toEqual(['rh1 configure']);
      expect(fleet.summary().totals.repliesLost).toBe(1);
    } finally {
      await fleet.stop();
    }
  });

  it('reenterAfterMs: a restarted node comes back into provisioning mode as a new cycle', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'again',
      count: 1,
      identityPattern: 'ra{i}',
      reenterAfterMs: 100,
      timeScale: 0.01,
      seed: 10,
    });
    try {
      const startups = (): number =>
        events.filter(
          (e) => e.subject.startsWith('choria.lifecycle.event.startup.') && eventData(e)['identity'] === 'ra1',
        ).length;
      for (let cycle = 0; cycle < 2; cycle++) {
        // its startup event follows its subscription on the same connection: once the event is
        // here, the broker routes requests to the node
        await until(
          'provisioning mode',
          () => fleet.node('ra1')?.lifecycle === 'waiting' && startups() >= 1 + 2 * cycle,
          3000,
        );
        const config = '{"plugin.choria.server.provision":"false"}';
        expect((await client.rpc('ra1', 'v1', 'choria_provision', 'configure', { config })).reply?.statuscode).toBe(0);
        if (cycle === 1)
          expect((await client.rpc('ra1', 'v1', 'choria_provision', 'configure', { config })).reply?.statuscode).toBe(
            0,
          );
        expect((await client.rpc('ra1', 'v1', 'choria_provision', 'restart', { splay: 1 })).reply?.statuscode).toBe(0);
        await until('the restart', () => fleet.node('ra1')?.lifecycle === 'provisioned', 2000);
      }
      await until('provisioning mode', () => fleet.node('ra1')?.lifecycle === 'waiting', 2000);
      const n = fleet.report().nodes[0];
      // the configuration is back to provisioning mode; two configures in the second cycle
      expect(n).toMatchObject({
        cycle: 2,
        restartCount: 2,
        configuredCount: 3,
        maxConfiguredPerCycle: 2,
        violationCount: 0,
      });
      expect(n?.configuration).toBeUndefined();
      expect(fleet.summary().totals).toMatchObject({ cycles: 2, maxConfiguredPerCycle: 2 });
    } finally {
      await fleet.stop();
    }
  });

  it('drops every request with dropRate 1 and counts the drops', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'drops',
      count: 3,
      identityPattern: 'd{i}',
      dropRate: 1,
      seed: 5,
    });
    try {
      expect(await client.discover('v1', DISCOVERY_FIELD.v1, 400)).toHaveLength(0);
      expect(fleet.summary().totals.dropped).toBe(3);
    } finally {
      await fleet.stop();
    }
  });

  it('sends no reply when the latency passes the agent deadline', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'slow',
      count: 2,
      identityPattern: 'sl{i}',
      latencyMs: 2000,
      seed: 4,
    });
    try {
      expect(await client.discover('v1', DISCOVERY_FIELD.v1, 400)).toHaveLength(0);
      expect(fleet.summary().totals.deadlineExceeded).toBe(2);
    } finally {
      await fleet.stop();
    }
  });

  it('spreads boots over bootSpreadMs', async () => {
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'spread',
      count: 5,
      identityPattern: 's{i}',
      bootSpreadMs: 1500,
      seed: 9,
    });
    try {
      expect(fleet.countByState().booting).toBeGreaterThan(0);
      await fleet.waitForBooted(4000);
      expect(fleet.countByState().waiting).toBe(5);
    } finally {
      await fleet.stop();
    }
  });
});

import { createPublicKey, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockEventLoopFromCheckPhase } from '@choria-provisioner/test-support/event-loop';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { readVector, vectorPath } from '@choria-provisioner/test-support/vectors';
import { ChoriaClient } from '../../src/choria/client.js';
import {
  ClientClosedError,
  ProvisioningLockError,
  RpcAbortError,
  RpcInputError,
  RpcUnsendableError,
  repeatingCannotHelp,
  RpcResponseCountError,
  RpcReplyLostError,
  RpcTimeoutError,
} from '../../src/choria/errors.js';
import { encodeLifecycleEvent, newLifecycleEvent, type LifecycleEvent } from '../../src/choria/lifecycle.js';
import { codecFor, DISCOVERY_REPLY_BODY } from '../../src/choria/protocol/codec.js';
import { nowNanoseconds } from '../../src/choria/protocol/ids.js';
import { transportJson } from '../../src/choria/protocol/envelope-codec.js';
import { v1Layers } from '../../src/choria/protocol/v1.js';
import { fakeJwt } from './support/jwt.js';
import { discoveryResponder } from './support/discovery-responder.js';
import { captureLogger } from './support/logger.js';
import { startResponders, type Responders } from './support/responder.js';
import { choriaSettingsWith } from '@choria-provisioner/test-support/settings';
import { until } from '@choria-provisioner/test-support/wait';
import { startTcpRelay } from '@choria-provisioner/test-support/tcp-relay';

const names = (n: number, prefix = 'node'): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}.example.net`);

describe('ChoriaClient against nats-server (protocol v1)', () => {
  let server: RunningNatsServer;
  let nc: NatsConnection;
  let client: ChoriaClient;
  const log = captureLogger('info');

  beforeAll(async () => {
    server = await startNatsServer({ jetstream: false });
    nc = await connect({ servers: server.url });
    client = new ChoriaClient(nc, choriaSettingsWith({ middlewareHosts: [server.url] }), {
      logger: log.logger,
      ownsConnection: true,
    });
  });

  afterAll(async () => {
    await client.close();
    await server.stop();
  });

  it('exposes who it is', () => {
    expect(client.protocol).toBe('v1');
    expect(client.identity).toBe('provisioner.example.net');
    expect(client.senderId).toBe('provisioner.example.net');
    expect(client.callerId).toBe('choria=provisioner.example.net');
    expect(client.nats).toBe(nc);
  });

  it('discovers exactly 1,000 responders spread over 3 connections', async () => {
    const identities = names(1000);
    const responders = await startResponders({ url: server.url, identities, connections: 3 });
    try {
      const found = await client.discover({ initialWaitMs: 1000 });
      expect(found).toHaveLength(1000);
      expect(new Set(found)).toEqual(new Set(identities));
      expect(responders.discoveryRequests).toBe(1000);
    } finally {
      await responders.close();
    }
  });

  it('loses none of 10,000 replies to one discovery', async () => {
    const pub = await connect({ servers: server.url });
    const codec = codecFor('v1');
    const identities = names(10_000, 'bulk');
    pub.subscribe('provisioning.broadcast.agent.discovery', {
      callback: (_err, msg) => {
        const req = codec.decodeRequest(msg.data);
        for (const identity of identities) {
          const reply = codec.encodeReply({
            requestId: req.id,
            sender: identity,
            agent: 'discovery',
            timeNs: nowNanoseconds(),
            body: DISCOVERY_REPLY_BODY,
          });
          pub.publish(req.headers.replyTo as string, reply.transportJson);
        }
        // a duplicate is de-duplicated; a reply whose hash fails still names its sender in the
        // transport header, which is what go-choria's discovery uses
        const dup = codec.encodeReply({
          requestId: req.id,
          sender: identities[0] as string,
          agent: 'discovery',
          timeNs: nowNanoseconds(),
          body: 'pong',
        });
        pub.publish(req.headers.replyTo as string, dup.transportJson);
        const tampered = codec.encodeReply({
          requestId: req.id,
          sender: 'tampered.example.net',
          agent: 'discovery',
          timeNs: nowNanoseconds(),
          body: 'pong',
        });
        const secure = tampered.secureReplyJson.replace('pong', 'pang');
        pub.publish(
          req.headers.replyTo as string,
          transportJson(v1Layers, secure, { sender: 'header-only.example.net' }),
        );
      },
    });
    await pub.flush();
    try {
      const found = await client.discover({ initialWaitMs: 1000, timeoutMs: 10_000 });
      expect(found).toHaveLength(10_001);
      expect(new Set(found)).toEqual(new Set([...identities, 'header-only.example.net']));
    } finally {
      await pub.close();
    }
  });

  it('sends the Choria discovery request and ends 300 ms after the last reply', async () => {
    const seen: {
      message: string;
      agent: string;
      filterAgent: readonly string[];
      filterIdentity: readonly string[];
    }[] = [];
    const raw = await discoveryResponder(server.url, (req, send) => {
      seen.push({
        message: req.payload.toString(),
        agent: req.agent,
        filterAgent: req.filter.agent,
        filterIdentity: req.filter.identity,
      });
      setTimeout(() => send('only.example.net'), 100);
    });
    try {
      const started = Date.now();
      const found = await client.discover({ initialWaitMs: 1500, timeoutMs: 5000, identityFilter: ['/^only/'] });
      const elapsed = Date.now() - started;
      expect(found).toEqual(['only.example.net']);
      expect(seen).toEqual([
        { message: 'cGluZw==', agent: 'discovery', filterAgent: ['choria_provision'], filterIdentity: ['/^only/'] },
      ]);
      // reply at ~100 ms + 300 ms window, well before the 1.5 s initial wait
      expect(elapsed).toBeGreaterThanOrEqual(390);
      expect(elapsed).toBeLessThan(1400);
    } finally {
      await raw.close();
    }
  });

  it('tells onFound of each node once, as its first reply arrives, long before the discovery ends', async () => {
    const raw = await discoveryResponder(server.url, (_req, send) => {
      send('early.example.net');
      send('early.example.net');
      setTimeout(() => send('late.example.net'), 200);
    });
    try {
      const started = Date.now();
      const heard: { identity: string; afterMs: number }[] = [];
      const found = await client.discover({
        initialWaitMs: 1500,
        timeoutMs: 5000,
        onFound: (identity) => heard.push({ identity, afterMs: Date.now() - started }),
      });
      const elapsed = Date.now() - started;
      expect(found.sort()).toEqual(['early.example.net', 'late.example.net']);
      expect(heard.map((h) => h.identity)).toEqual(['early.example.net', 'late.example.net']);
      // the first at once, the discovery itself only 300 ms after the last reply (~500 ms)
      expect(heard[0]?.afterMs).toBeLessThan(150);
      expect(elapsed).toBeGreaterThanOrEqual(490);
      expect(elapsed - (heard[1]?.afterMs ?? 0)).toBeGreaterThanOrEqual(290);
    } finally {
      await raw.close();
    }
  });

  it('fails the discovery when onFound throws, naming the error', async () => {
    const raw = await discoveryResponder(server.url, (_req, send) => send('one.example.net'));
    try {
      await expect(
        client.discover({
          initialWaitMs: 1000,
          onFound: () => {
            throw new Error('cannot take one.example.net');
          },
        }),
      ).rejects.toThrow('cannot take one.example.net');
    } finally {
      await raw.close();
    }
  });

  it('with listenToEnd keeps listening past a quiet spell until the overall limit, catching a late node', async () => {
    // one node at once, another after a gap three times the 300 ms window
    const fleet = (_req: unknown, send: (sender: string) => void): void => {
      send('prompt.example.net');
      setTimeout(() => send('slow.example.net'), 900);
    };
    const raw = await discoveryResponder(server.url, fleet);
    try {
      // without it the quiet window ends the discovery before the slow node answers
      expect(await client.discover({ initialWaitMs: 1500, timeoutMs: 1500 })).toEqual(['prompt.example.net']);
      const started = Date.now();
      const found = await client.discover({ initialWaitMs: 1500, timeoutMs: 1500, listenToEnd: true });
      const elapsed = Date.now() - started;
      expect(found.sort()).toEqual(['prompt.example.net', 'slow.example.net']);
      // it ends at the overall limit, not 300 ms after the slow node
      expect(elapsed).toBeGreaterThanOrEqual(1490);
      expect(elapsed).toBeLessThan(2400);
    } finally {
      await raw.close();
    }
  });

  it('returns nothing when nobody answers, after the initial wait', async () => {
    const started = Date.now();
    expect(await client.discover({ initialWaitMs: 200 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  describe('rpc', () => {
    let responders: Responders;
    beforeAll(async () => {
      responders = await startResponders({
        url: server.url,
        identities: [
          'node1.example.net',
          'locked.example.net',
          'silent.example.net',
          'twice.example.net',
          'stall.example.net',
        ],
        connections: 2,
        extraSenders: { 'twice.example.net': ['impostor.example.net'] },
        onRpc: ({ identity, request }) => {
          if (identity === 'silent.example.net') return undefined;
          // this process stops reading for 1.5 s once the reply has gone out
          if (identity === 'stall.example.net') void blockEventLoopFromCheckPhase(1500);
          if (identity === 'locked.example.net')
            return { action: request.action, statuscode: 1, statusmsg: 'Could not obtain provisioning lock', data: {} };
          if (request.action === 'inventory')
            return {
              action: 'inventory',
              statuscode: 0,
              statusmsg: 'OK',
              data: { version: '0.29.4', upgradable: false },
            };
          return {
            action: request.action,
            statuscode: 0,
            statusmsg: 'OK',
            data: { message: 'Restarting Choria Server after 2s', echo: request.data },
          };
        },
      });
    });
    afterAll(async () => {
      await responders.close();
    });

    it('round-trips a request to one node', async () => {
      const reply = await client.rpc('node1.example.net', 'rpcutil', 'inventory', {});
      expect(reply).toMatchObject({
        sender: 'node1.example.net',
        action: 'inventory',
        statuscode: 0,
        statusmsg: 'OK',
        data: { version: '0.29.4', upgradable: false },
      });
      expect(reply.requestId).toMatch(/^[0-9a-f]{32}$/);
      expect(reply.durationMs).toBeGreaterThanOrEqual(0);

      const restart = await client.rpc('node1.example.net', 'choria_provision', 'restart', { splay: 1, token: 't0k' });
      expect((restart.data as { echo: unknown }).echo).toEqual({ splay: 1, token: 't0k' });
      const last = responders.requests.at(-1);
      expect(last).toMatchObject({
        agent: 'choria_provision',
        collective: 'provisioning',
        ttl: 60,
        callerId: 'choria=provisioner.example.net',
      });
      expect(last?.filter.agent).toEqual(['choria_provision']);
      expect(last?.headers.replyTo).toBe(`provisioning.reply.6079c8d10a2ceceb5904de01a22e9b41.${restart.requestId}`);
    });

    it('maps a non-zero status to its typed error', async () => {
      const err = await client
        .rpc('locked.example.net', 'choria_provision', 'jwt', { token: '' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProvisioningLockError);
      expect((err as Error).message).toBe(
        'invalid response from locked.example.net: Could not obtain provisioning lock (1)',
      );
    });

    it('times out on an absent node within its timeout', async () => {
      const started = Date.now();
      const err = await client
        .rpc('absent.example.net', 'rpcutil', 'inventory', {}, { timeoutMs: 300 })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RpcTimeoutError);
      expect((err as Error).message).toBe('request rpcutil#inventory to absent.example.net timed out after 300 ms');
      expect(Date.now() - started).toBeLessThan(1500);
    });

    it('reads a reply that came within the timeout while this process was blocked past it, instead of timing out', async () => {
      const reply = await client.rpc('stall.example.net', 'rpcutil', 'inventory', {}, { timeoutMs: 500 });
      expect(reply.sender).toBe('stall.example.net');
    });

    it('defaults the timeout to discovery_timeout + the DDL timeout (1 s + 2 s for rpcutil here)', async () => {
      const started = Date.now();
      const err = await client.rpc('silent.example.net', 'rpcutil', 'inventory', {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RpcTimeoutError);
      expect((err as Error).message).toBe('request rpcutil#inventory to silent.example.net timed out after 3 s');
      expect((err as RpcTimeoutError).timeoutMs).toBe(3000);
      expect(Date.now() - started).toBeGreaterThanOrEqual(2990);
    });

    it('counts a reply from another identity and refuses the result', async () => {
      const err = await client.rpc('twice.example.net', 'rpcutil', 'inventory', {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RpcResponseCountError);
      expect((err as Error).message).toBe('received 2 responses while expecting a response from twice.example.net');
    });

    it('honours an AbortSignal while waiting', async () => {
      const controller = new AbortController();
      const reason = new Error('provisioner stopping');
      setTimeout(() => controller.abort(reason), 100);
      const started = Date.now();
      const err = await client
        .rpc('silent.example.net', 'rpcutil', 'inventory', {}, { signal: controller.signal })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RpcAbortError);
      expect((err as RpcAbortError).reason).toBe(reason);
      expect((err as Error).message).toBe(
        'request rpcutil#inventory to silent.example.net aborted: provisioner stopping',
      );
      expect(Date.now() - started).toBeLessThan(2000);

      const before = responders.requests.length;
      await expect(
        client.rpc('node1.example.net', 'rpcutil', 'inventory', {}, { signal: controller.signal }),
      ).rejects.toBeInstanceOf(RpcAbortError);
      await responders.flush();
      expect(responders.requests.length).toBe(before);
    });

    it('validates inputs before publishing anything', async () => {
      const before = responders.requests.length;
      await expect(
        client.rpc('node1.example.net', 'choria_provision', 'restart', { splay: 1.5, token: '' }),
      ).rejects.toThrow(new RpcInputError(['choria_provision#restart: input "splay" must be an integer, got 1.5']));
      await expect(client.rpc('bad*identity', 'rpcutil', 'inventory', {})).rejects.toBeInstanceOf(RpcInputError);
      await responders.flush();
      expect(responders.requests.length).toBe(before);
    });

    it('refuses a request larger than the broker carries, before sending it: RpcUnsendableError, which asking again cannot help', async () => {
      const before = responders.requests.length;
      // nats-server's default max_payload is 1 MiB
      const config = JSON.stringify({ 'plugin.choria.server.provision': 'false', big: 'x'.repeat(2 * 1024 * 1024) });
      const err = await client
        .rpc('node1.example.net', 'choria_provision', 'configure', { token: 't', config })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RpcUnsendableError);
      expect(repeatingCannotHelp(err)).toBe(true);
      expect((err as Error).message).toMatch(/could not be published to provisioning\.node\.node1\.example\.net/);
      await responders.flush();
      expect(responders.requests.length).toBe(before);
    });

    it('handles many concurrent requests over the one reply subscription', async () => {
      const replies = await Promise.all(
        Array.from({ length: 200 }, () => client.rpc('node1.example.net', 'rpcutil', 'inventory', {})),
      );
      expect(new Set(replies.map((r) => r.requestId)).size).toBe(200);
      expect(replies.every((r) => r.sender === 'node1.example.net')).toBe(true);
    });
  });

  it('publishes and receives lifecycle events, counting garbage via onInvalid', async () => {
    const received: LifecycleEvent[] = [];
    const invalid: string[] = [];
    const sub = client.subscribeLifecycle('startup', 'provision_mode_server', (ev) => received.push(ev), {
      onInvalid: (err, raw) => invalid.push(`${err.message} <- ${Buffer.from(raw).toString().slice(0, 20)}`),
    });
    const own: LifecycleEvent[] = [];
    const ownSub = client.subscribeLifecycle('startup', 'provisioner', (ev) => own.push(ev));
    await nc.flush();

    const pub = await connect({ servers: server.url });
    const subject = 'choria.lifecycle.event.startup.provision_mode_server';
    const nodeEvent = newLifecycleEvent({
      type: 'startup',
      identity: 'fresh.example.net',
      component: 'provision_mode_server',
      version: '0.29.4',
    });
    pub.publish(subject, encodeLifecycleEvent(nodeEvent, 'cloudevents'));
    pub.publish(subject, 'this is not json');
    pub.publish(
      subject,
      encodeLifecycleEvent(nodeEvent, 'choria').replace('io.choria.lifecycle.v1.startup', 'choria:lifecycle:startup:1'),
    );
    pub.publish(subject, encodeLifecycleEvent({ ...nodeEvent, identity: 'second.example.net' }, 'choria'));
    await pub.flush();
    const published = client.publishStartupEvent({ component: 'provisioner', version: '0.1.0' });

    await until(
      'the events and the invalid ones',
      () => received.length === 2 && invalid.length === 2 && own.length === 1,
    );
    expect(received.map((e) => [e.identity, e.format])).toEqual([
      ['fresh.example.net', 'cloudevents'],
      ['second.example.net', 'choria'],
    ]);
    expect(invalid[0]).toMatch(/invalid JSON/);
    expect(invalid[1]).toMatch(/unsupported event format/);
    expect(own[0]).toEqual(published);
    expect(published).toMatchObject({
      type: 'startup',
      identity: 'provisioner.example.net',
      component: 'provisioner',
      version: '0.1.0',
      format: 'choria',
    });

    sub.unsubscribe();
    ownSub.unsubscribe();
    pub.publish(subject, encodeLifecycleEvent(nodeEvent, 'choria'));
    await pub.flush();
    await nc.flush();
    expect(received).toHaveLength(2);
    await pub.close();
  });

  it('fails outstanding requests when closed', async () => {
    const other = new ChoriaClient(await connect({ servers: server.url }), choriaSettingsWith(), {
      logger: log.logger,
      ownsConnection: true,
    });
    const pending = other.rpc('nobody.example.net', 'rpcutil', 'inventory', {});
    await other.close();
    await expect(pending).rejects.toBeInstanceOf(ClientClosedError);
    expect(other.isClosed).toBe(true);
    await expect(other.discover()).rejects.toBeInstanceOf(ClientClosedError);
  });
});

describe('ChoriaClient protocol v2 with an ed25519 signer', () => {
  it('discovers and calls a v2 responder that verifies the signature', async () => {
    const server = await startNatsServer({ jetstream: false });
    const dir = mkdtempSync(join(tmpdir(), 'cpts-choria-v2-'));
    const publicHex = readVector('protocol', 'derived', 'keys', 'ed25519-signer.public');
    const jwtFile = join(dir, 'client.jwt');
    const token = fakeJwt({ callerid: 'provisioner_signer', public_key: publicHex });
    writeFileSync(jwtFile, token);
    const responders = await startResponders({ url: server.url, identities: names(20), connections: 2, version: 'v2' });
    const log = captureLogger('info');
    const settings = choriaSettingsWith({
      middlewareHosts: [server.url],
      securityProvider: 'choria',
      protocolSecure: true,
      tokenFile: jwtFile,
      seedFile: vectorPath('protocol', 'derived', 'keys', 'ed25519-signer.seed'),
    });
    let client: ChoriaClient | undefined;
    try {
      // the plain nats-server here has no auth; the JWT/sig CONNECT fields are simply ignored
      client = await ChoriaClient.connect(settings, { logger: log.logger, name: 'v2-test' });
      expect(client.protocol).toBe('v2');
      expect(client.callerId).toBe('provisioner_signer');
      expect(log.text()).toContain('using Choria protocol v2: security provider "choria"');

      expect((await client.discover({ initialWaitMs: 1000 })).sort()).toEqual(names(20));
      const reply = await client.rpc(names(20)[3] as string, 'choria_provision', 'gen25519', {
        nonce: 'abc',
        token: '',
      });
      expect(reply.requestId).toMatch(/^[0-9A-Za-z]{27}$/);

      const req = responders.requests.at(-1);
      expect(req).toMatchObject({
        version: 'v2',
        callerId: 'provisioner_signer',
        credential: token,
        id: reply.requestId,
      });
      const pub = createPublicKey({
        key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(publicHex, 'hex')]),
        format: 'der',
        type: 'spki',
      });
      expect(verify(null, Buffer.from(req?.requestJson ?? ''), pub, Buffer.from(req?.signature ?? '', 'base64'))).toBe(
        true,
      );
      expect(Math.abs((req?.time ?? 0) / 1e9 - Date.now() / 1000)).toBeLessThan(10);
      expect(log.text()).not.toContain(token);
    } finally {
      await client?.close();
      await responders.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ChoriaClient across a broker restart', () => {
  it('reconnects and a later RPC works', async () => {
    const server = await startNatsServer({ jetstream: false });
    const responders = await startResponders({ url: server.url, identities: ['node1.example.net'] });
    const log = captureLogger('info');
    const statuses: string[] = [];
    const client = await ChoriaClient.connect(choriaSettingsWith({ middlewareHosts: [server.url] }), {
      logger: log.logger,
      onStatus: (s) => statuses.push(s.type),
    });
    try {
      expect((await client.rpc('node1.example.net', 'rpcutil', 'inventory', {})).statuscode).toBe(0);
      await server.restart();
      await until('a reconnect', () => statuses.includes('reconnect'), 15_000);
      await client.nats.flush();
      await responders.flush();
      const reply = await client.rpc('node1.example.net', 'rpcutil', 'inventory', {}, { timeoutMs: 5_000 });
      expect(reply.sender).toBe('node1.example.net');
      expect(log.text()).toMatch(/warn: disconnected from Choria broker/);
      expect(log.text()).toMatch(/info: reconnected to Choria broker/);
      expect(await client.discover({ initialWaitMs: 500 })).toEqual(['node1.example.net']);
    } finally {
      await client.close();
      await responders.close();
      await server.stop();
    }
  });

  it('a request published while the broker is down fails as soon as the connection is back, not after its timeout', async () => {
    const first = await startNatsServer({ jetstream: false });
    const statuses: string[] = [];
    const client = await ChoriaClient.connect(choriaSettingsWith({ middlewareHosts: [first.url] }), {
      logger: captureLogger('info').logger,
      onStatus: (s) => statuses.push(s.type),
    });
    let second: RunningNatsServer | undefined;
    try {
      await first.stop();
      await until('the disconnect', () => statuses.includes('disconnect'), 10_000);
      // buffered by the client while there is no broker: on the way back nobody may be listening
      const started = Date.now();
      const lost = client.rpc('ghost.example.net', 'rpcutil', 'inventory', {}, { timeoutMs: 30_000 }).then(
        () => 'answered',
        (err: unknown) => err,
      );
      second = await startNatsServer({ jetstream: false, port: first.port });
      const err = await lost;
      expect(err).toBeInstanceOf(RpcReplyLostError);
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await client.close();
      await second?.stop();
    }
  });
  it('requests timing out in a row while nothing comes in on a connection that claims to be up: the connection is replaced before the pings notice', async () => {
    const server = await startNatsServer({ jetstream: false });
    const relay = await startTcpRelay(server.url);
    const log = captureLogger('info');
    const client = await ChoriaClient.connect(choriaSettingsWith({ middlewareHosts: [relay.url] }), {
      logger: log.logger,
    });
    try {
      const before = relay.accepted;
      relay.goSilent();
      const started = Date.now();
      for (let i = 0; i < 3; i++) {
        await expect(
          client.rpc(`ghost-${i}.example.net`, 'rpcutil', 'inventory', {}, { timeoutMs: 300 }),
        ).rejects.toBeInstanceOf(RpcTimeoutError);
      }
      await until('a new connection through the relay', () => relay.accepted > before, 3_000);
      // three 300 ms timeouts and the reconnect: well before two unanswered pings (4-6 s)
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(log.text()).toMatch(
        /3 requests in a row timed out while nothing at all came in on the broker connection, and the broker did not answer a ping/,
      );
    } finally {
      await client.close();
      await relay.close();
      await server.stop();
    }
  });
  it('requests to nodes that vanished time out with nothing received, but the broker answers its ping: the connection is kept', async () => {
    const server = await startNatsServer({ jetstream: false });
    const relay = await startTcpRelay(server.url);
    const log = captureLogger('info');
    const client = await ChoriaClient.connect(choriaSettingsWith({ middlewareHosts: [relay.url] }), {
      logger: log.logger,
    });
    try {
      const before = relay.accepted;
      for (let i = 0; i < 3; i++) {
        await expect(
          client.rpc(`vanished-${i}.example.net`, 'rpcutil', 'inventory', {}, { timeoutMs: 300 }),
        ).rejects.toBeInstanceOf(RpcTimeoutError);
      }
      await new Promise((r) => setTimeout(r, 1_500));
      expect(relay.accepted).toBe(before);
      expect(log.text()).not.toMatch(/replacing the connection/);
    } finally {
      await client.close();
      await relay.close();
      await server.stop();
    }
  });
});

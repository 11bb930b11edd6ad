import { verify, createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startNatsServer } from '@choria-provisioner/test-support/nats-server';
import { readVector, vectorPath } from '@choria-provisioner/test-support/vectors';
import {
  OutageBackoff,
  backoffDelayMs,
  choriaAuthenticator,
  connectChoria,
  natsConnectionOptions,
  natsServers,
} from '../../src/choria/connector.js';
import { ConnectError } from '../../src/choria/errors.js';
import { loadChoriaCredentials } from '../../src/choria/security/choria-credentials.js';
import { fakeJwt } from './support/jwt.js';
import { captureLogger } from './support/logger.js';
import { choriaSettingsWith } from '@choria-provisioner/test-support/settings';

const dir = mkdtempSync(join(tmpdir(), 'cpts-choria-conn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const seedPath = vectorPath('protocol', 'derived', 'keys', 'ed25519-signer.seed');
const publicHex = readVector('protocol', 'derived', 'keys', 'ed25519-signer.public');
const token = fakeJwt({ callerid: 'provisioner_signer', public_key: publicHex });
const tokenPath = join(dir, 'client.jwt');
writeFileSync(tokenPath, `${token}\n`);

describe('connection options', () => {
  it('needs at least one middleware host and says where it looked', () => {
    expect(() => natsServers(choriaSettingsWith({ middlewareHosts: [], source: '/etc/choria/client.conf' }))).toThrow(
      new ConnectError(
        'no Choria broker configured: plugin.choria.middleware_hosts is empty in /etc/choria/client.conf',
      ),
    );
    expect(natsServers(choriaSettingsWith({ middlewareHosts: ['broker:4222', 'tls://b2:4222'] }))).toEqual([
      'nats://broker:4222',
      'tls://b2:4222',
    ]);
  });

  it('reconnects forever with a name, TLS files and user/password', () => {
    const opts = natsConnectionOptions(
      choriaSettingsWith({
        tls: true,
        certificateFile: '/c.pem',
        keyFile: '/k.pem',
        caFile: '/ca.pem',
        natsUser: 'provisioner',
        natsPassword: 'pw',
      }),
      { name: 'prov' },
    );
    expect(opts).toMatchObject({
      name: 'prov',
      maxReconnectAttempts: -1,
      reconnect: true,
      user: 'provisioner',
      pass: 'pw',
    });
    expect(opts.tls).toEqual({ certFile: '/c.pem', keyFile: '/k.pem', caFile: '/ca.pem' });
    expect(natsConnectionOptions(choriaSettingsWith({ tls: false }), {}).tls).toBeUndefined();
  });

  it('uses JWT auth (auth_token, jwt, nonce signature) and the md5 inbox for the choria provider', () => {
    const credentials = loadChoriaCredentials(tokenPath, seedPath, '<test>');
    const settings = choriaSettingsWith({
      securityProvider: 'choria',
      tls: true,
      tokenFile: tokenPath,
      seedFile: seedPath,
      natsUser: 'provisioner',
      natsPassword: 'pw',
    });
    const opts = natsConnectionOptions(settings, { credentials });
    expect(opts.tls).toEqual({ rejectUnauthorized: false });
    expect(opts.inboxPrefix).toBe('provisioning.reply.22ec67b1822edddbee1f71725ee3827c');
    expect(opts.user).toBeUndefined();
    const auth = (opts.authenticator as unknown as (nonce?: string) => Record<string, string>)('abc123');
    expect(auth).toMatchObject({ auth_token: token, jwt: token, user: 'provisioner', pass: 'pw' });
    const pub = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(publicHex, 'hex')]),
      format: 'der',
      type: 'spki',
    });
    expect(verify(null, Buffer.from('abc123'), pub, Buffer.from(auth['sig'] as string, 'base64url'))).toBe(true);
    expect(choriaAuthenticator(credentials)()).not.toHaveProperty('sig');
  });

  it('waits between reconnect attempts a quarter of the outage so far, from 250 ms to 1 s', () => {
    let now = 1_000_000;
    const b = new OutageBackoff(
      () => now,
      () => 0.5,
    );
    expect(b.delay()).toBe(250); // connected: the shortest
    b.disconnected();
    now += 2_000;
    expect(b.delay()).toBe(500);
    now += 1_000;
    b.disconnected(); // a second report keeps the first moment
    expect(b.delay()).toBe(750);
    now += 60_000;
    expect(b.delay()).toBe(1_000);
    b.connected();
    expect(b.delay()).toBe(250);
  });

  it('backs off exponentially with jitter, capped', () => {
    expect(backoffDelayMs(0, () => 0.5)).toBe(250);
    expect(backoffDelayMs(2, () => 0.5)).toBe(1000);
    expect(backoffDelayMs(20, () => 0.5)).toBe(5000);
    expect(backoffDelayMs(1, () => 0)).toBe(375);
    expect(backoffDelayMs(1, () => 0.999)).toBeLessThanOrEqual(625);
  });
});

describe('connectChoria against nats-server', () => {
  it('fails with an error naming the URL after the allowed attempts, logging each retry', async () => {
    const port = await freePort();
    const log = captureLogger();
    const err = await connectChoria(choriaSettingsWith({ middlewareHosts: [`127.0.0.1:${port}`] }), {
      logger: log.logger,
      maxConnectAttempts: 2,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as Error).message).toMatch(new RegExp(`^could not connect to nats://127\\.0\\.0\\.1:${port}: `));
    expect(
      log.lines.filter(
        (l) => l.startsWith(`warn: could not connect to nats://127.0.0.1:${port}: `) && l.endsWith(', retrying'),
      ),
    ).toHaveLength(1);
  });

  it('keeps retrying while the broker is down at start', async () => {
    const port = await freePort();
    const log = captureLogger();
    const connecting = connectChoria(choriaSettingsWith({ middlewareHosts: [`nats://127.0.0.1:${port}`] }), {
      logger: log.logger,
      name: 'late-start',
    });
    await new Promise((r) => setTimeout(r, 700));
    const server = await startNatsServer({ port, jetstream: false });
    try {
      const nc = await connecting;
      expect(nc.isClosed()).toBe(false);
      expect(log.text()).toMatch(new RegExp(`warn: could not connect to nats://127\\.0\\.0\\.1:${port}: .*, retrying`));
      expect(log.text()).toContain(`info: connected to Choria broker 127.0.0.1:${port}`);
      await nc.close();
    } finally {
      await server.stop();
    }
  });

  it('authenticates with user and password, and never logs the password', async () => {
    const server = await startNatsServer({
      jetstream: false,
      config: 'authorization { user: provisioner, password: "s3cr3t-pw" }',
    });
    try {
      const log = captureLogger();
      const nc = await connectChoria(
        choriaSettingsWith({ middlewareHosts: [server.url], natsUser: 'provisioner', natsPassword: 's3cr3t-pw' }),
        { logger: log.logger },
      );
      await nc.close();
      const bad = await connectChoria(
        choriaSettingsWith({ middlewareHosts: [server.url], natsUser: 'provisioner', natsPassword: 'wrong-pw' }),
        {
          logger: log.logger,
          maxConnectAttempts: 2,
        },
      ).catch((e: unknown) => e as Error);
      expect(bad).toBeInstanceOf(ConnectError);
      expect((bad as Error).message).toMatch(/AUTHORIZATION_VIOLATION|Authorization Violation/i);
      expect(`${log.text()}\n${(bad as Error).message}`).not.toMatch(/s3cr3t-pw|wrong-pw/);
    } finally {
      await server.stop();
    }
  });

  it('presents the client JWT as auth token for the choria provider', async () => {
    const server = await startNatsServer({ jetstream: false, config: `authorization { token: "${token}" }` });
    try {
      const log = captureLogger();
      const settings = choriaSettingsWith({
        middlewareHosts: [server.url],
        securityProvider: 'choria',
        tokenFile: tokenPath,
        seedFile: seedPath,
      });
      const nc = await connectChoria(settings, { logger: log.logger });
      expect(nc.isClosed()).toBe(false);
      await nc.close();
      expect(log.text()).not.toContain(token);
    } finally {
      await server.stop();
    }
  });
});

// End-to-end matrix (issue: End-to-end matrix): every feature combination the README documents,
// each through the Provisioner on a real nats-server against the simulator, each ending with every
// node provisioned exactly once and no protocol violation.
//
// Covered elsewhere, not repeated here: leader election failover and two sites in one process are
// in provisioner.test.ts ("with leader election only the leader provisions; ..." and "runs two
// sites in one process ..."); faults.network.test.ts kills a leader under request loss.
import { createPublicKey, generateKeyPairSync, verify, webcrypto, X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import 'reflect-metadata';
import { Pkcs10CertificateRequest } from '@peculiar/x509';
import { connect, type NatsConnection } from 'nats';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { HelperRequest } from '../../packages/core/src/host/helper/types.js';
import {
  FleetHarness,
  chainSigningToken,
  childProcesses,
  driveUntilProvisioned,
  expectExactlyOnce,
  metricValue,
  plainConfiguration,
  signEdDsaJwt,
} from '@choria-provisioner/test-support/fleet';
import { until } from '@choria-provisioner/test-support/wait';
import { createTestPki, issueCertificate, natsTlsBlock } from '@choria-provisioner/test-support/tls';
import { readVector, repoRoot, vectorPath } from '@choria-provisioner/test-support/vectors';
import { provisioningLogin } from '@choria-provisioner/test-support/nats-server';

const h = new FleetHarness();
afterEach(() => h.cleanup());

const outcome = (r: Registry, o: string): Promise<number> =>
  metricValue(r, 'choria_provisioner_outcomes', { outcome: o });

/** The first directed request the provisioner sends, as published on the broker. */
async function tapFirstRequest(nc: NatsConnection): Promise<{ version: string; secure: Record<string, unknown> }> {
  const sub = nc.subscribe('provisioning.node.>', { max: 1 });
  h.onCleanup(async () => sub.unsubscribe());
  for await (const m of sub) {
    const transport = JSON.parse(new TextDecoder().decode(m.data)) as { protocol: string; data: string };
    return {
      version: transport.protocol,
      secure: JSON.parse(Buffer.from(transport.data, 'base64').toString('utf8')) as Record<string, unknown>,
    };
  }
  throw new Error('the tap subscription ended without a request');
}

const orgSeedHex = readVector('tokens', 'ed25519-signer.seed').trim();
const orgPublicHex = readVector('tokens', 'ed25519-signer.public').trim();
const provSeedPath = vectorPath('tokens', 'ed25519-other.seed');
const provPublicHex = readVector('tokens', 'ed25519-other.public').trim();

describe('end-to-end matrix', () => {
  it('plain insecure v1: every node found by discovery is provisioned once', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 40, facts: { role: 'web' } });
    await fleet.waitForBooted(10_000);
    const seen: HelperRequest[] = [];
    const registry = new Registry();
    const p = h.provisioner(s.url, 'workers: 8\n', {
      registry,
      helper: (req) => {
        seen.push(req);
        return { configuration: plainConfiguration(req) };
      },
    });
    await p.start();
    await fleet.waitForAllProvisioned(20_000);
    expectExactlyOnce(fleet);
    expect(seen).toHaveLength(40);
    expect(seen.every((r) => r.jwt === null && r.csr === null && r.ed25519_pubkey === null)).toBe(true);
    expect(JSON.parse(seen[0]?.inventory ?? '{}')).toMatchObject({ facts: { role: 'web' } });
    expect(await metricValue(registry, 'choria_provisioner_provisioned')).toBe(40);
    expect(await outcome(registry, 'failed')).toBe(0);
  });

  it('TLS to the broker with the provisioner certificate: verified TLS and RSA-signed v1 requests', async () => {
    const pki = await createTestPki(['provisioner.example.net', 'simulator'], h.tempDir());
    const prov = pki.clients['provisioner.example.net'];
    const sim = pki.clients['simulator'];
    if (prov === undefined || sim === undefined) throw new Error('test PKI incomplete');
    const s = await h.broker({ config: natsTlsBlock(pki, { verifyClients: true }) });
    const simTls = { caFile: pki.caFile, certFile: sim.certFile, keyFile: sim.keyFile };

    // the broker really demands a client certificate
    await expect(
      connect({ servers: s.url, tls: { caFile: pki.caFile }, reconnect: false, timeout: 5000 }),
    ).rejects.toThrow();

    const fleet = await h.fleet(s.url, { count: 30, tls: simTls });
    await fleet.waitForBooted(10_000);
    const tap = await connect({ servers: s.url, tls: simTls, ...provisioningLogin(s) });
    h.onCleanup(() => tap.close());
    const firstRequest = tapFirstRequest(tap);
    await tap.flush();

    const registry = new Registry();
    const p = h.provisioner(s.url, 'choria_insecure: false\nworkers: 8\n', {
      registry,
      choriaConfig: [
        'plugin.security.provider = file',
        `plugin.security.file.certificate = ${prov.certFile}`,
        `plugin.security.file.key = ${prov.keyFile}`,
        `plugin.security.file.ca = ${pki.caFile}`,
      ].join('\n'),
    });
    expect(p.choria.tls).toBe(true);
    expect(p.choria.protocolSecure).toBe(true);
    await p.start();
    await fleet.waitForAllProvisioned(20_000);
    expectExactlyOnce(fleet);

    const { version, secure } = await firstRequest;
    expect(version).toBe('choria:transport:1');
    expect(secure['pubcert']).toBe(readFileSync(prov.certFile, 'utf8'));
    const message = String(secure['message']);
    expect(JSON.parse(message)).toMatchObject({
      envelope: { callerid: 'choria=provisioner.example.net', collective: 'provisioning' },
    });
    const signature = Buffer.from(String(secure['signature']), 'base64');
    expect(verify('sha256', Buffer.from(message), new X509Certificate(prov.certPem).publicKey, signature)).toBe(true);
    expect(await metricValue(registry, 'choria_provisioner_provisioned')).toBe(30);
  });

  it('jwt: RSA-signed provisioning tokens verified, their claims handed to the helper', async () => {
    const dir = h.tempDir();
    const pub = join(dir, 'signer-public.pem');
    writeFileSync(pub, readVector('tokens', 'rsa-signer-public.pem'));
    const s = await h.broker();
    const fleet = await h.fleet(s.url, {
      count: 30,
      jwt: { signer: 'rsa', keyPem: readVector('tokens', 'rsa-signer-key.pem'), extensions: { customer: 'acme' } },
    });
    await fleet.waitForBooted(10_000);
    const claims: unknown[] = [];
    const p = h.provisioner(s.url, `workers: 8\njwt_verify_cert: ${pub}\nfeatures:\n  jwt: true\n`, {
      helper: (req) => {
        claims.push(req.jwt);
        return { configuration: plainConfiguration(req) };
      },
    });
    await p.start();
    await fleet.waitForAllProvisioned(20_000);
    expectExactlyOnce(fleet);
    expect(claims).toHaveLength(30);
    for (const c of claims)
      expect(c).toMatchObject({ cht: 's3cret', purpose: 'choria_provisioning', extensions: { customer: 'acme' } });
    expect(fleet.report().totals.rpcCounts['choria_provision#jwt']).toBe(30);
  });

  it('pki with key delivery: CSRs checked, certificates issued, keys encrypted for and decrypted by each node', async () => {
    const dir = h.tempDir();
    const pub = join(dir, 'signer-public.pem');
    writeFileSync(pub, readVector('tokens', 'rsa-signer-public.pem'));
    const pki = await createTestPki([], h.tempDir());
    // One delivered key for the whole fleet keeps the test fast; each node still gets it encrypted
    // with its own X25519 exchange, and a certificate of its own for it.
    const delivered = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const deliveredPem = delivered.privateKey.export({ type: 'pkcs1', format: 'pem' }) as string;
    const deliveredPublic = await webcrypto.subtle.importKey(
      'spki',
      delivered.publicKey.export({ type: 'spki', format: 'der' }),
      { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
      true,
      ['verify'],
    );
    const s = await h.broker();
    const fleet = await h.fleet(s.url, {
      count: 24,
      jwt: { signer: 'rsa', keyPem: readVector('tokens', 'rsa-signer-key.pem') },
    });
    await fleet.waitForBooted(10_000);
    const csrs = new Map<string, string>();
    const p = h.provisioner(s.url, `workers: 6\njwt_verify_cert: ${pub}\nfeatures:\n  jwt: true\n  pki: true\n`, {
      helper: async (req) => {
        csrs.set(req.identity, req.csr?.csr ?? '');
        const cert = await issueCertificate(pki.ca, {
          commonName: req.identity,
          usage: 'client',
          publicKey: deliveredPublic,
        });
        return {
          configuration: { ...plainConfiguration(req), 'plugin.security.provider': 'file' },
          certificate: cert.certPem,
          ca: pki.ca.certPem,
          key: deliveredPem,
        };
      },
    });
    await p.start();
    await fleet.waitForAllProvisioned(30_000);
    expectExactlyOnce(fleet);
    for (const n of fleet.report().nodes) {
      expect(n.hasCertificate, n.identity).toBe(true);
      expect(n.hasPrivateKey, n.identity).toBe(true);
      const csr = new Pkcs10CertificateRequest(csrs.get(n.identity) ?? '');
      expect(csr.subjectName.getField('CN')).toEqual([n.identity]);
      expect(await csr.verify()).toBe(true);
    }
  });

  for (const chained of [false, true]) {
    it(`ed25519${chained ? ' with a chain token' : ''}: nonce proofs checked, server JWTs minted and verified by every node`, async () => {
      const dir = h.tempDir();
      const tokenFile = join(dir, 'signer.jwt');
      if (chained) writeFileSync(tokenFile, `${chainSigningToken(orgSeedHex, orgPublicHex, provPublicHex)}\n`);
      const s = await h.broker();
      const fleet = await h.fleet(s.url, {
        count: 30,
        jwt: { signer: 'ed25519', seedHex: orgSeedHex },
        serverJwtVerification: chained ? { issuerPublicHex: orgPublicHex } : { signerEd25519PublicHex: provPublicHex },
      });
      await fleet.waitForBooted(10_000);
      const yaml = `workers: 8\njwt_verify_cert: ${orgPublicHex}\njwt_signing_key: ${provSeedPath}\n${chained ? `jwt_signing_token: ${tokenFile}\n` : ''}features:\n  ed25519: true\n`;
      const p = h.provisioner(s.url, yaml, {
        helper: (req) => ({
          configuration: {
            ...plainConfiguration(req),
            'plugin.security.provider': 'choria',
            collectives: 'choria,acme',
          },
          server_claims: { permissions: { streams: true } },
        }),
      });
      await p.start();
      await fleet.waitForAllProvisioned(20_000);
      expectExactlyOnce(fleet);
      for (const n of fleet.report().nodes) {
        expect(n.serverJwtClaims, n.identity).toMatchObject({
          identity: n.identity,
          purpose: 'choria_server',
          collectives: ['choria', 'acme'],
          permissions: { streams: true },
        });
        if (chained) expect(String(n.serverJwtClaims?.['iss'])).toMatch(/^C-/);
        else expect(n.serverJwtClaims?.['iss']).toBe('Choria Provisioner');
      }
    });
  }

  it('upgrades: a node on another version is upgraded, then configured on the pass its startup event starts', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 24, upgradable: true, version: '0.29.4', eventFormat: 'cloudevents' });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    const versionsSeen: string[] = [];
    const p = h.provisioner(
      s.url,
      'workers: 6\nupgrades_repository: https://repo.example.net/choria\nfeatures:\n  upgrades: true\n',
      {
        registry,
        helper: (req) => {
          versionsSeen.push(String((JSON.parse(req.inventory) as { version?: unknown }).version));
          return { upgrade: '0.30.0', configuration: plainConfiguration(req) };
        },
      },
    );
    await p.start();
    // no discovery after the start-up one: the node's startup event on the new version brings it back
    await fleet.waitForAllProvisioned(20_000);
    expectExactlyOnce(fleet);
    for (const n of fleet.report().nodes) expect(n, n.identity).toMatchObject({ version: '0.30.0', updateCount: 1 });
    expect(versionsSeen.filter((v) => v === '0.29.4')).toHaveLength(24);
    expect(versionsSeen.filter((v) => v === '0.30.0')).toHaveLength(24);
    expect(await outcome(registry, 'upgraded')).toBe(24);
    expect(await outcome(registry, 'provisioned')).toBe(24);
    expect(await metricValue(registry, 'choria_provisioner_discover_cycles')).toBe(1);
    expect(await metricValue(registry, 'choria_provisioner_event_discovered')).toBe(24);
  });

  it('v2 protocol nodes: the choria security provider signs ed25519 v2 requests; issuer-chained server JWTs', async () => {
    // A v2 (Organization Issuer) provisioner always uses TLS unless choria_insecure, which forces
    // v1: it cannot reach a plain broker. The broker here presents a
    // certificate but does not verify clients; without a CA the choria provider does not verify it.
    const pki = await createTestPki([], h.tempDir());
    const s = await h.broker({ config: natsTlsBlock(pki, { verifyClients: false }) });
    const dir = h.tempDir();
    const clientKey = generateKeyPairSync('ed25519').privateKey;
    const seedHex = clientKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('hex');
    const clientPublicHex = createPublicKey(clientKey)
      .export({ format: 'der', type: 'spki' })
      .subarray(-32)
      .toString('hex');
    const now = Math.floor(Date.now() / 1000);
    const clientJwt = signEdDsaJwt(
      {
        callerid: 'choria=provisioner.example.net',
        purpose: 'choria_client_id',
        public_key: clientPublicHex,
        iss: `I-${orgPublicHex}`,
        iat: now,
        nbf: now,
        exp: now + 3600,
      },
      orgSeedHex,
    );
    writeFileSync(join(dir, 'client.jwt'), `${clientJwt}\n`);
    writeFileSync(join(dir, 'client.seed'), seedHex);
    const signingToken = join(dir, 'signer.jwt');
    writeFileSync(signingToken, `${chainSigningToken(orgSeedHex, orgPublicHex, provPublicHex)}\n`);

    const fleet = await h.fleet(s.url, {
      count: 30,
      protocol: 'v2',
      tls: { caFile: pki.caFile },
      jwt: { signer: 'ed25519', seedHex: orgSeedHex },
      serverJwtVerification: { issuerPublicHex: orgPublicHex },
    });
    await fleet.waitForBooted(10_000);
    const tap = await connect({ servers: s.url, tls: { caFile: pki.caFile }, ...provisioningLogin(s) });
    h.onCleanup(() => tap.close());
    const firstRequest = tapFirstRequest(tap);
    await tap.flush();

    const yaml = `choria_insecure: false\nworkers: 8\njwt_verify_cert: ${orgPublicHex}\njwt_signing_key: ${provSeedPath}\njwt_signing_token: ${signingToken}\nfeatures:\n  ed25519: true\n`;
    const claims: unknown[] = [];
    const p = h.provisioner(s.url, yaml, {
      choriaConfig: [
        'plugin.security.provider = choria',
        `plugin.security.choria.token_file = ${join(dir, 'client.jwt')}`,
        `plugin.security.choria.seed_file = ${join(dir, 'client.seed')}`,
      ].join('\n'),
      helper: (req) => {
        claims.push(req.jwt);
        return { configuration: { ...plainConfiguration(req), 'plugin.security.provider': 'choria' } };
      },
    });
    await p.start();
    await fleet.waitForAllProvisioned(20_000);
    expectExactlyOnce(fleet);
    expect(claims.every((c) => (c as { v2?: unknown }).v2 === true)).toBe(true);
    for (const n of fleet.report().nodes) {
      expect(n.protocol).toBe('v2');
      expect(String(n.serverJwtClaims?.['iss']), n.identity).toMatch(/^C-/);
    }
    const { version, secure } = await firstRequest;
    expect(version).toBe('io.choria.protocol.v2.transport');
    expect(secure['caller']).toBe(clientJwt);
    const signature = Buffer.from(String(secure['signature']), 'base64');
    expect(verify(null, Buffer.from(String(secure['request']), 'base64'), clientKey, signature)).toBe(true);
  });

  it('defer: the first attempt of every node is deferred, the next one configures it', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 30 });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    const asked = new Map<string, number>();
    const p = h.provisioner(s.url, 'workers: 8\n', {
      registry,
      helper: (req) => {
        const n = (asked.get(req.identity) ?? 0) + 1;
        asked.set(req.identity, n);
        return n === 1 ? { defer: true, msg: 'CMDB entry not ready' } : { configuration: plainConfiguration(req) };
      },
    });
    await p.start();
    await until('every node deferred once', async () => (await outcome(registry, 'deferred')) === 30, 20_000);
    expect(fleet.countByState().provisioned).toBe(0);
    expect(fleet.report().totals.rpcCounts['choria_provision#configure'] ?? 0).toBe(0);
    await driveUntilProvisioned(p, fleet, 20_000);
    expectExactlyOnce(fleet);
    expect([...asked.values()].every((n) => n === 2)).toBe(true);
    expect(await outcome(registry, 'provisioned')).toBe(30);
  });

  it('shutdown: nodes the helper rejects are shut down, the others configured', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 32 });
    await fleet.waitForBooted(10_000);
    const registry = new Registry();
    const rejected = (identity: string): boolean => Number(/node-(\d+)\./.exec(identity)?.[1]) % 4 === 0;
    const p = h.provisioner(s.url, 'workers: 8\n', {
      registry,
      helper: (req) =>
        rejected(req.identity)
          ? { shutdown: true, msg: 'not in the CMDB' }
          : { configuration: plainConfiguration(req) },
    });
    await p.start();
    await fleet.waitForAllProvisioned(20_000);
    expectExactlyOnce(fleet, { except: (n) => rejected(n.identity) });
    const down = fleet.report().nodes.filter((n) => rejected(n.identity));
    expect(down).toHaveLength(8);
    for (const n of down)
      expect(n, n.identity).toMatchObject({ state: 'shutdown', shutdownCount: 1, configuredCount: 0, restartCount: 0 });
    expect(await metricValue(registry, 'choria_provisioner_helper_shutdown_requests')).toBe(8);
    expect(await outcome(registry, 'shutdown')).toBe(8);
    expect(await outcome(registry, 'provisioned')).toBe(24);
  });

  it('events-only discovery: nodes booting after the start are provisioned from Choria-format startup events', async () => {
    // provisioner.test.ts covers the CloudEvents format (the server default); this is the plain one
    const s = await h.broker();
    const registry = new Registry();
    const p = h.provisioner(s.url, 'interval: 10m\nworkers: 8\n', { registry });
    await p.start();
    await p.discover(); // joins the start-up discovery, which finds nothing
    const fleet = await h.fleet(s.url, { count: 40, eventFormat: 'choria', bootSpreadMs: 1500 });
    await fleet.waitForAllProvisioned(20_000);
    expectExactlyOnce(fleet);
    expect(await metricValue(registry, 'choria_provisioner_event_discovered')).toBe(40);
    expect(await metricValue(registry, 'choria_provisioner_discovered')).toBe(0);
    expect(await metricValue(registry, 'choria_provisioner_discover_cycles')).toBe(1);
  });

  it('process helper: examples/helpers/plain-helper.mjs runs once per node from the helper key', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 20 });
    await fleet.waitForBooted(10_000);
    const script = join(repoRoot, 'examples', 'helpers', 'plain-helper.mjs');
    const registry = new Registry();
    const p = h.provisioner(s.url, `workers: 4\nhelper: ${script}\nhelper_timeout: 20s\n`, {
      registry,
      helper: undefined,
    });
    await p.start();
    await fleet.waitForAllProvisioned(25_000);
    expectExactlyOnce(fleet);
    for (const n of fleet.report().nodes) {
      expect(n.configuration, n.identity).toEqual({
        identity: n.identity,
        loglevel: 'info',
        'plugin.choria.server.provision': 'false',
        'plugin.choria.middleware_hosts': 'nats://broker.example.net:4222',
        registerinterval: '300',
      });
    }
    expect(await metricValue(registry, 'choria_provisioner_helper_errors')).toBe(0);
    expect(childProcesses('plain-helper.mjs')).toEqual([]);
  });

  it('pool helper: examples/helpers/pool-helper.mjs with helper_mode pool answers every node from long-lived processes', async () => {
    const s = await h.broker();
    const fleet = await h.fleet(s.url, { count: 30 });
    await fleet.waitForBooted(10_000);
    const script = join(repoRoot, 'examples', 'helpers', 'pool-helper.mjs');
    const p = h.provisioner(
      s.url,
      `workers: 6\nhelper: ${script}\nhelper_mode: pool\nhelper_pool_size: 2\nhelper_timeout: 20s\n`,
      { helper: undefined },
    );
    await p.start();
    await fleet.waitForAllProvisioned(25_000);
    expectExactlyOnce(fleet);
    for (const n of fleet.report().nodes)
      expect(n.configuration, n.identity).toMatchObject({ identity: n.identity, loglevel: 'info' });
    const pool = childProcesses('pool-helper.mjs');
    expect(pool.length).toBeGreaterThanOrEqual(1);
    expect(pool.length).toBeLessThanOrEqual(2);
    await p.stop();
    await until('the pool processes to exit', () => childProcesses('pool-helper.mjs').length === 0, 5000);
  });
});

// The whole per-node pipeline (issue: Host) against the simulator on a real nats-server, one mode
// at a time. The simulator does the server's real crypto and records every protocol violation.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedFleet, type FleetOptions } from '../../packages/simulator/src/index.js';
import type { ChoriaClient } from '../../packages/core/src/choria/client.js';
import { createHostRunner } from '../../packages/core/src/host/host.js';
import { createHelperRunner } from '../../packages/core/src/host/helper/index.js';
import type { HelperFunction, HelperRequest } from '../../packages/core/src/host/helper/types.js';
import { ProvisionerMetrics } from '../../packages/core/src/metrics/metrics.js';
import { PauseFlag } from '../../packages/core/src/util/pause.js';
import { silentLogger } from '../../packages/core/src/util/logger.js';
import { ksuid } from '../../packages/core/src/util/ids.js';
import type { ProvisionerConfig } from '../../packages/core/src/config/types.js';
import type { HostJob, HostResult } from '../../packages/core/src/host/types.js';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { readVector, vectorPath } from '@choria-provisioner/test-support/vectors';
import { testClient, testConfig, testSettings } from '@choria-provisioner/test-support/settings';

let srv: RunningNatsServer;
let fleet: SimulatedFleet | undefined;
let client: ChoriaClient | undefined;

beforeAll(async () => {
  srv = await startNatsServer({ jetstream: false });
});
afterAll(async () => {
  await srv.stop();
});
afterEach(async () => {
  await client?.close();
  await fleet?.stop();
  client = undefined;
  fleet = undefined;
});

/**
 * A success that configured the node names what it was given that expires (the certificate or the
 * server JWT) and, these nodes' provisioning JWTs lacking --default, that it cannot be renewed.
 */
const PROVISIONED_WITH_CREDENTIALS = {
  outcome: 'provisioned',
  credentials: {
    expiresAt: expect.any(Number) as number,
    renewability: { renewable: false, reason: expect.stringContaining('made without --default') as string },
  },
};

const plainConfig = (req: HelperRequest): Record<string, string> => ({
  identity: req.identity,
  'plugin.choria.server.provision': 'false',
  'plugin.choria.middleware_hosts': 'nats://broker.example.net:4222',
});

async function setup(config: ProvisionerConfig, fleetOpts: Partial<FleetOptions>, helper: HelperFunction, count = 3) {
  fleet = await SimulatedFleet.start({
    servers: [srv.url],
    count,
    token: 's3cret',
    timeScale: 0.01,
    rsaBits: 1024,
    control: false,
    ...fleetOpts,
  });
  await fleet.waitForBooted(10_000);
  client = await testClient(testSettings(srv.url, config));
  const registry = new Registry();
  const metrics = new ProvisionerMetrics(registry, 'test');
  const run = createHostRunner({
    config,
    client,
    helper: createHelperRunner({ fn: helper, timeoutMs: 5000 }),
    metrics,
    pause: new PauseFlag(),
    backoff: () => 10,
    rpcTimeoutMs: 1000,
  });
  const provision = async (identity: string, extra: Partial<HostJob> = {}): Promise<HostResult> =>
    await run({
      identity,
      discoveredAt: Date.now(),
      signal: new AbortController().signal,
      logger: silentLogger(),
      onStep: () => undefined,
      ...extra,
    });
  return { fleet, run, provision, registry };
}

function expectCleanlyProvisioned(f: SimulatedFleet): void {
  const report = f.report();
  expect(report.totals.violations, JSON.stringify(report.totals.violationsByKind)).toBe(0);
  for (const n of report.nodes) {
    expect(n.configuredCount, n.identity).toBe(1);
    expect(n.restartCount, n.identity).toBe(1);
  }
}

describe('Host pipeline against the simulator', () => {
  it('plain insecure: inventory, helper, configure, restart', async () => {
    const seen: HelperRequest[] = [];
    const {
      fleet: f,
      provision,
      registry,
    } = await setup(testConfig('interval: 1m\n'), { facts: { role: 'web' } }, (req) => {
      seen.push(req);
      return { configuration: plainConfig(req) };
    });
    for (const id of f.identities()) expect(await provision(id)).toEqual({ outcome: 'provisioned' });
    await f.waitForAllProvisioned(10_000);
    expectCleanlyProvisioned(f);
    expect(seen).toHaveLength(3);
    const req = seen[0] as HelperRequest;
    expect(req.csr).toBeNull();
    expect(req.ed25519_pubkey).toBeNull();
    expect(req.jwt).toBeNull();
    expect(JSON.parse(req.inventory)).toMatchObject({
      facts: { role: 'web' },
      main_collective: 'provisioning',
      version: '0.29.4',
    });
    const node = f.report().nodes[0];
    expect(node?.configuration).toMatchObject({ 'plugin.choria.server.provision': 'false' });
    expect(node?.rpcCounts).toMatchObject({
      'rpcutil#inventory': 1,
      'choria_provision#configure': 1,
      'choria_provision#restart': 1,
    });
    const text = await registry.metrics();
    expect(text).toContain('choria_provisioner_rpc_time_count{site="test",rpc="choria_provision#configure"} 3');
    expect(text).toMatch(/choria_provisioner_helper_time_count\{site="test"\} 3/);
  });

  it('jwt: fetches and verifies the provisioning token, hands its claims to the helper', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-host-'));
    const pub = join(dir, 'signer-public.pem');
    writeFileSync(pub, readVector('tokens', 'rsa-signer-public.pem'));
    const seen: HelperRequest[] = [];
    const { fleet: f, provision } = await setup(
      testConfig(`jwt_verify_cert: ${pub}\nfeatures:\n  jwt: true\n`),
      { jwt: { signer: 'rsa', keyPem: readVector('tokens', 'rsa-signer-key.pem'), extensions: { customer: 'acme' } } },
      (req) => {
        seen.push(req);
        return { configuration: plainConfig(req) };
      },
    );
    for (const id of f.identities()) expect(await provision(id)).toEqual({ outcome: 'provisioned' });
    await f.waitForAllProvisioned(10_000);
    expectCleanlyProvisioned(f);
    expect(seen[0]?.jwt).toMatchObject({
      cht: 's3cret',
      purpose: 'choria_provisioning',
      extensions: { customer: 'acme' },
      ou: 'choria',
    });
  });

  it('jwt: a token signed by another key fails the node with the upstream error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-host-'));
    const pub = join(dir, 'other-public.pem');
    writeFileSync(pub, readVector('tokens', 'rsa-other-public.pem'));
    const { fleet: f, provision } = await setup(
      testConfig(`jwt_verify_cert: ${pub}\nfeatures:\n  jwt: true\n`),
      { jwt: { signer: 'rsa', keyPem: readVector('tokens', 'rsa-signer-key.pem') } },
      (req) => ({ configuration: plainConfig(req) }),
      1,
    );
    const r = await provision(f.identities()[0] as string);
    expect(r.outcome).toBe('failed');
    expect(r.message).toMatch(/^could not validate JWT: node-1\.example\.net: could not parse provisioner token: /);
    expect(f.report().nodes[0]?.configuredCount).toBe(0);
  });

  it('pki: CSR checked, key encrypted for the node, decrypted by it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-host-'));
    const pub = join(dir, 'signer-public.pem');
    writeFileSync(pub, readVector('tokens', 'rsa-signer-public.pem'));
    const seen: HelperRequest[] = [];
    const { fleet: f, provision } = await setup(
      testConfig(`jwt_verify_cert: ${pub}\nfeatures:\n  jwt: true\n  pki: true\n`),
      { jwt: { signer: 'rsa', keyPem: readVector('tokens', 'rsa-signer-key.pem') } },
      (req) => {
        seen.push(req);
        const key = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
          type: 'pkcs1',
          format: 'pem',
        }) as string;
        return {
          configuration: { ...plainConfig(req), 'plugin.security.provider': 'file' },
          certificate: readVector('protocol', 'derived', 'keys', 'rip.mcollective-cert.pem'),
          ca: readVector('protocol', 'derived', 'keys', 'ca.pem'),
          key,
        };
      },
      2,
    );
    for (const id of f.identities()) expect(await provision(id)).toMatchObject(PROVISIONED_WITH_CREDENTIALS);
    await f.waitForAllProvisioned(10_000);
    expectCleanlyProvisioned(f);
    for (const n of f.report().nodes) {
      expect(n.hasCertificate).toBe(true);
      expect(n.hasPrivateKey).toBe(true);
    }
    expect(seen[0]?.csr?.csr).toContain('BEGIN CERTIFICATE REQUEST');
    expect(seen[0]?.csr?.ssldir).not.toBe('');
  });

  it('pki: a denied identity is refused before the helper runs', async () => {
    let helperRan = false;
    const { provision } = await setup(
      testConfig('features:\n  pki: true\n'),
      { identityPattern: 'bad-{i}.mcollective' },
      (req) => {
        helperRan = true;
        return { configuration: plainConfig(req) };
      },
      1,
    );
    const r = await provision('bad-1.mcollective');
    expect(r.outcome).toBe('failed');
    expect(r.message).toBe(
      'could not provision bad-1.mcollective: bad-1.mcollective matches denied certificate pattern',
    );
    expect(helperRan).toBe(false);
  });

  const orgSeed = (): Buffer => Buffer.from(readVector('tokens', 'ed25519-signer.seed'), 'hex');
  const orgPublic = readVector('tokens', 'ed25519-signer.public').trim();
  const provSeedPath = vectorPath('tokens', 'ed25519-other.seed');
  const provPublic = readVector('tokens', 'ed25519-other.public').trim();
  const edKey = (seed: Buffer) =>
    createPrivateKey({
      key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]),
      format: 'der',
      type: 'pkcs8',
    });
  const b64u = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

  function chainToken(): string {
    const now = Math.floor(Date.now() / 1000);
    const jti = ksuid(now);
    const tcs = sign(null, Buffer.from(`${jti}.${provPublic}`), edKey(orgSeed())).toString('hex');
    const claims = {
      callerid: 'provisioner_signer',
      purpose: 'choria_client_id',
      tcs,
      public_key: provPublic,
      iss: `I-${orgPublic}`,
      exp: now + 86400,
      nbf: now,
      iat: now,
      jti,
    };
    const head = `${b64u(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' }))}.${b64u(JSON.stringify(claims))}`;
    return `${head}.${b64u(sign(null, Buffer.from(head), edKey(orgSeed())))}`;
  }

  for (const chained of [false, true]) {
    it(`ed25519${chained ? ' with a chain token' : ''}: nonce proof, minted server JWT verified by the node`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'cpts-host-'));
      const tokenFile = join(dir, 'signer.jwt');
      if (chained) writeFileSync(tokenFile, chainToken() + '\n');
      const seen: HelperRequest[] = [];
      const { fleet: f, provision } = await setup(
        testConfig(
          `jwt_verify_cert: ${orgPublic}\njwt_signing_key: ${provSeedPath}\n${chained ? `jwt_signing_token: ${tokenFile}\n` : ''}features:\n  ed25519: true\n`,
        ),
        {
          jwt: { signer: 'ed25519', seedHex: orgSeed().toString('hex') },
          serverJwtVerification: chained ? { issuerPublicHex: orgPublic } : { signerEd25519PublicHex: provPublic },
        },
        (req) => {
          seen.push(req);
          return {
            configuration: { ...plainConfig(req), 'plugin.security.provider': 'choria', collectives: 'choria,acme' },
            server_claims: { exp: Math.floor(Date.now() / 1000) + 7 * 86400, permissions: { streams: true } },
          };
        },
      );
      for (const id of f.identities()) expect(await provision(id)).toMatchObject(PROVISIONED_WITH_CREDENTIALS);
      await f.waitForAllProvisioned(10_000);
      expectCleanlyProvisioned(f);
      const node = f.report().nodes[0];
      expect(node?.serverJwtClaims).toMatchObject({
        identity: node?.identity,
        collectives: ['choria', 'acme'],
        purpose: 'choria_server',
        permissions: { streams: true },
      });
      if (chained) expect(String(node?.serverJwtClaims?.['iss'])).toMatch(/^C-/);
      else expect(node?.serverJwtClaims?.['iss']).toBe('Choria Provisioner');
      expect(seen[0]?.ed25519_pubkey?.public_key).toMatch(/^[0-9a-f]{64}$/);
      expect(seen[0]?.jwt?.purpose).toBe('choria_provisioning');
      // a fresh key of the wrong public half would not verify: the nonce proof is real
      expect(
        createPublicKey(edKey(orgSeed())).export({ format: 'der', type: 'spki' }).subarray(12).toString('hex'),
      ).toBe(orgPublic);
    });
  }

  it('ed25519 on a node older than go-choria 0.25.0: one gen25519 answer, an error naming the release needed; a startup event version saves even that', async () => {
    const { fleet: f, provision } = await setup(
      testConfig(`jwt_verify_cert: ${orgPublic}\njwt_signing_key: ${provSeedPath}\nfeatures:\n  ed25519: true\n`),
      {
        jwt: { signer: 'ed25519', seedHex: orgSeed().toString('hex') },
        serverJwtVerification: { signerEd25519PublicHex: provPublic },
        version: (i) => (i === 0 ? '0.24.1' : '0.29.4'),
      },
      (req) => ({
        configuration: { ...plainConfig(req), 'plugin.security.provider': 'choria' },
        server_claims: { exp: Math.floor(Date.now() / 1000) + 86400 },
      }),
      2,
    );
    const [old, current] = f.identities() as [string, string];
    const needs = 'features.ed25519 (choria_provision#gen25519) needs go-choria 0.25.0 or newer';
    const gen25519Asked = (): number | undefined =>
      f.report().nodes.find((n) => n.identity === old)?.rpcCounts['choria_provision#gen25519'];
    const first = await provision(old);
    expect(first.outcome).toBe('failed');
    expect(first.message).toBe(`${old} answered "Unknown action gen25519 for agent choria_provision": ${needs}`);
    // an unknown action is not asked again: the answer cannot change
    expect(gen25519Asked()).toBe(1);
    const known = await provision(old, { reportedVersion: '0.24.1' });
    expect(known).toMatchObject({ outcome: 'failed', message: `${old} runs go-choria 0.24.1: ${needs}` });
    expect(gen25519Asked()).toBe(1);
    // a current node, with or without a version from its event, is provisioned as before
    expect(await provision(current, { reportedVersion: '0.29.4' })).toMatchObject(PROVISIONED_WITH_CREDENTIALS);
    expect(f.report().totals.violations).toBe(0);
  });

  const upgradeConfig = (optional: boolean): ProvisionerConfig =>
    testConfig(
      `upgrades_repository: https://repo.example.net/choria\nupgrades_optional: ${optional}\nfeatures:\n  upgrades: true\n`,
    );

  it('upgrades: equal version continues to configure', async () => {
    const { fleet: f, provision } = await setup(
      upgradeConfig(false),
      { upgradable: true, version: '0.29.4' },
      (req) => ({ upgrade: '0.29.4', configuration: plainConfig(req) }),
      1,
    );
    expect(await provision(f.identities()[0] as string)).toEqual({ outcome: 'provisioned' });
    await f.waitForAllProvisioned(10_000);
    expectCleanlyProvisioned(f);
    expect(f.report().nodes[0]?.updateCount).toBe(0);
  });

  it('upgrades: a different version updates the node first, configuration on its next pass', async () => {
    const { fleet: f, provision } = await setup(
      upgradeConfig(false),
      { upgradable: true, version: '0.29.4' },
      (req) => ({ upgrade: '0.30.0', configuration: plainConfig(req) }),
      1,
    );
    const id = f.identities()[0] as string;
    const r = await provision(id);
    expect(r.outcome).toBe('upgraded');
    await f.waitFor(
      (fl) => fl.report().nodes[0]?.version === '0.30.0' && fl.report().nodes[0]?.state === 'waiting',
      10_000,
      'node back on 0.30.0',
    );
    expect(await provision(id)).toEqual({ outcome: 'provisioned' });
    await f.waitForAllProvisioned(10_000);
    expect(f.report().nodes[0]).toMatchObject({ updateCount: 1, configuredCount: 1, violationCount: 0 });
  });

  it('upgrades: a node that cannot update fails, or continues with upgrades_optional', async () => {
    const { fleet: f, provision } = await setup(
      upgradeConfig(false),
      { upgradable: false },
      (req) => ({ upgrade: '0.30.0', configuration: plainConfig(req) }),
      1,
    );
    const r = await provision(f.identities()[0] as string);
    expect(r.outcome).toBe('failed');
    expect(r.message).toContain('does not allow version updates');
    await client?.close();
    await fleet?.stop();
    const again = await setup(
      upgradeConfig(true),
      { upgradable: false },
      (req) => ({ upgrade: '0.30.0', configuration: plainConfig(req) }),
      1,
    );
    expect(await again.provision(again.fleet.identities()[0] as string)).toEqual({ outcome: 'provisioned' });
    await again.fleet.waitForAllProvisioned(10_000);
    expect(again.fleet.report().nodes[0]).toMatchObject({ updateCount: 0, configuredCount: 1, violationCount: 0 });
  });

  it('defer: nothing changes on the node', async () => {
    const { fleet: f, provision } = await setup(testConfig(''), {}, () => ({ defer: true, msg: 'facts not ready' }), 1);
    expect(await provision(f.identities()[0] as string)).toEqual({
      outcome: 'deferred',
      message: "configuration defered by the helper; its message is in the provisioner's log",
      helperMessage: 'facts not ready',
    });
    expect(f.report().nodes[0]).toMatchObject({ state: 'waiting', configuredCount: 0, violationCount: 0 });
  });

  it('shutdown: the node is told to shut down, counted', async () => {
    const {
      fleet: f,
      provision,
      registry,
    } = await setup(testConfig(''), {}, () => ({ shutdown: true, msg: 'not in the CMDB' }), 1);
    expect(await provision(f.identities()[0] as string)).toEqual({
      outcome: 'shutdown',
      message: "shut down on request of the helper; its message is in the provisioner's log",
      helperMessage: 'not in the CMDB',
    });
    await f.waitForState('shutdown', 1, 10_000);
    expect(f.report().nodes[0]).toMatchObject({ configuredCount: 0, shutdownCount: 1, violationCount: 0 });
    expect(await registry.metrics()).toContain('choria_provisioner_helper_shutdown_requests{site="test"} 1');
  });

  it('an empty configuration fails fast without a configure RPC', async () => {
    const { fleet: f, provision } = await setup(testConfig(''), {}, () => ({ configuration: {} }), 1);
    const r = await provision(f.identities()[0] as string);
    expect(r.outcome).toBe('failed');
    expect(r.message).toContain('empty configuration');
    expect(f.report().nodes[0]?.rpcCounts['choria_provision#configure'] ?? 0).toBe(0);
  });

  it('a policy file name go-choria refuses is refused before any RPC: the node is left untouched, still in provisioning mode', async () => {
    const reply = (req: HelperRequest) => ({
      configuration: plainConfig(req),
      action_policies: { 'rpcutil.policy': 'policy default deny', choria_util: 'policy default allow' },
    });
    const { fleet: f, provision } = await setup(testConfig(''), {}, reply, 1);
    const r = await provision(f.identities()[0] as string);
    expect(r.outcome).toBe('failed');
    expect(r.message).toMatch(/action_policies key "choria_util" does not end in "\.policy"/);
    const node = f.report().nodes[0];
    expect(node).toMatchObject({ state: 'waiting', configuredCount: 0, violationCount: 0 });
    expect(node?.configuration).toBeUndefined();
    expect(node?.rpcCounts['choria_provision#configure'] ?? 0).toBe(0);
  });

  it('the simulator, like go-choria, writes the configuration before it refuses a misnamed policy', async () => {
    // what the refusal above prevents: sent anyway, the node keeps the new file and no policies
    const { fleet: f } = await setup(testConfig(''), {}, () => ({ defer: true }), 1);
    const node = f.nodes[0];
    expect(node).toBeDefined();
    const c = await testClient(testSettings(srv.url, testConfig('')));
    try {
      const data = {
        token: 's3cret',
        config: JSON.stringify({ 'plugin.choria.server.provision': 'false' }),
        action_policies: { rpcutil: 'x' },
      };
      await expect(c.rpc(node?.identity ?? '', 'choria_provision', 'configure', data)).rejects.toThrow(
        /Could not save Action Policies: expected "rpcutil" to have .policy extension/,
      );
    } finally {
      await c.close();
    }
    expect(f.report().nodes[0]?.configuration).toEqual({ 'plugin.choria.server.provision': 'false' });
  });

  it('a node locked by another provisioner is skipped, not retried', async () => {
    const config = testConfig('features:\n  jwt: true\njwt_verify_cert: "00"\n');
    const { fleet: f, provision } = await setup(config, {}, (req) => ({ configuration: plainConfig(req) }), 1);
    const id = f.identities()[0] as string;
    const other = await testClient(testSettings(srv.url, config, 'other-provisioner.example.net'));
    try {
      await other.rpc(id, 'choria_provision', 'jwt', { token: 's3cret' }).catch(() => undefined);
    } finally {
      await other.close();
    }
    const r = await provision(id);
    expect(r.outcome).toBe('skipped_locked');
    expect(f.report().nodes[0]?.rpcCounts['choria_provision#jwt']).toBe(2);
  });

  it('a helper failure fails the attempt with its error and the next attempt works', async () => {
    let calls = 0;
    const {
      fleet: f,
      provision,
      registry,
    } = await setup(
      testConfig(''),
      {},
      (req) => {
        calls++;
        if (calls === 1) return { configuration: { port: 8080 } };
        return { configuration: plainConfig(req) };
      },
      1,
    );
    const id = f.identities()[0] as string;
    const r = await provision(id);
    expect(r.outcome).toBe('failed');
    expect(r.message).toContain('configuration["port"] must be a string');
    expect(await provision(id)).toEqual({ outcome: 'provisioned' });
    expect(await registry.metrics()).toContain('choria_provisioner_helper_errors{site="test"} 1');
  });

  it('an absent node is gone after one short try and a ping, without an RPC error', async () => {
    const { provision, registry } = await setup(
      testConfig('liveness_timeout: 300ms\n'),
      {},
      (req) => ({ configuration: plainConfig(req) }),
      1,
    );
    const started = Date.now();
    const r = await provision('absent.example.net');
    expect(r.outcome).toBe('gone');
    expect(r.message).toMatch(
      /^absent\.example\.net is gone: no reply to rpcutil#inventory and to rpcutil#ping within \d+ ms; it comes back with the next discovery or startup event$/,
    );
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await registry.metrics()).not.toMatch(
      /choria_provisioner_rpc_errors\{site="test",rpc="rpcutil#inventory"\} [1-9]/,
    );
  });

  it('an absent node fails after its tries with the step and the last error when the liveness check is off', async () => {
    const { provision, registry } = await setup(
      testConfig('liveness_timeout: 0s\n'),
      {},
      (req) => ({ configuration: plainConfig(req) }),
      1,
    );
    const started = Date.now();
    const r = await provision('absent.example.net');
    expect(r.outcome).toBe('failed');
    expect(r.message).toMatch(
      /^could not perform rpcutil#inventory on absent\.example\.net: 5 tries, last: .*timed out/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await registry.metrics()).toContain('choria_provisioner_rpc_errors{site="test",rpc="rpcutil#inventory"} 1');
  });

  it('a stale node is skipped', async () => {
    const { run } = await setup(testConfig(''), {}, (req) => ({ configuration: plainConfig(req) }), 1);
    const r = await run({
      identity: 'node-1.example.net',
      discoveredAt: Date.now() - 3 * 60_000,
      signal: new AbortController().signal,
      logger: silentLogger(),
      onStep: () => undefined,
    });
    expect(r.outcome).toBe('stale');
    expect(r.message).toMatch(/^skipping node that's been waiting 3m0/);
  });
});

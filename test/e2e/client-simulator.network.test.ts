// The core Choria client against the simulator (two independent implementations of the wire
// protocol) on a real nats-server: discovery at scale and every action in protocol v1 and v2.
import { createPrivateKey, createPublicKey, randomBytes, sign } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedFleet } from '../../packages/simulator/src/index.js';
import { ChoriaClient } from '../../packages/core/src/choria/client.js';
import { RpcAbortedError, RpcTimeoutError } from '../../packages/core/src/choria/errors.js';
import { parseChoriaConfig } from '../../packages/core/src/config/choria-config.js';
import { silentLogger } from '../../packages/core/src/util/logger.js';
import { newRequestId } from '../../packages/core/src/util/ids.js';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { readVector } from '@choria-provisioner/test-support/vectors';

let srv: RunningNatsServer;
const cleanups: (() => Promise<void>)[] = [];
beforeAll(async () => {
  srv = await startNatsServer({ jetstream: false });
});
afterAll(async () => {
  await srv.stop();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const b64u = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

/** A v1 (file provider, insecure) or v2 (choria provider: client JWT + ed25519 seed) client. */
async function client(version: 'v1' | 'v2'): Promise<ChoriaClient> {
  let text = `identity = provisioner.example.net\nplugin.choria.middleware_hosts = ${srv.url}\n`;
  if (version === 'v1') {
    text += 'plugin.security.provider = file\n';
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-v2-'));
    const seed = randomBytes(32);
    const key = createPrivateKey({
      key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]),
      format: 'der',
      type: 'pkcs8',
    });
    const pub = createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(12).toString('hex');
    const now = Math.floor(Date.now() / 1000);
    const head = `${b64u(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' }))}.${b64u(JSON.stringify({ callerid: 'provisioner_signer', purpose: 'choria_client_id', public_key: pub, iat: now, exp: now + 3600 }))}`;
    // the org issuer signs the client JWT; provisioning-mode servers do not verify it
    const org = createPrivateKey({
      key: Buffer.concat([
        Buffer.from('302e020100300506032b657004220420', 'hex'),
        Buffer.from(readVector('tokens', 'ed25519-signer.seed'), 'hex'),
      ]),
      format: 'der',
      type: 'pkcs8',
    });
    writeFileSync(join(dir, 'client.jwt'), `${head}.${b64u(sign(null, Buffer.from(head), org))}\n`);
    writeFileSync(join(dir, 'client.seed'), seed.toString('hex'));
    text += `plugin.security.provider = choria\nplugin.security.choria.token_file = ${join(dir, 'client.jwt')}\nplugin.security.choria.seed_file = ${join(dir, 'client.seed')}\n`;
  }
  const settings = { ...parseChoriaConfig(text, 'test.cfg'), tls: false, protocolSecure: version === 'v2' };
  const c = await ChoriaClient.connect(settings, { logger: silentLogger() });
  cleanups.push(() => c.close());
  expect(c.protocol).toBe(version);
  return c;
}

async function fleet(
  count: number,
  protocol: 'v1' | 'v2',
  extra: Record<string, unknown> = {},
): Promise<SimulatedFleet> {
  const f = await SimulatedFleet.start({
    servers: [srv.url],
    count,
    protocol,
    token: 's3cret',
    timeScale: 0.01,
    rsaBits: 1024,
    control: false,
    eventFormat: 'none',
    upgradable: true,
    jwt: { signer: 'rsa', keyPem: readVector('tokens', 'rsa-signer-key.pem'), update: true },
    ...extra,
  });
  cleanups.push(() => f.stop());
  await f.waitForBooted(20_000);
  return f;
}

describe('ChoriaClient against the simulator', () => {
  it('discovery of 1,000 simulated nodes finds exactly 1,000', async () => {
    const f = await fleet(1000, 'v1', { nodesPerConnection: 250 });
    const c = await client('v1');
    const found = await c.discover();
    expect(found).toHaveLength(1000);
    expect(new Set(found)).toEqual(new Set(f.identities()));
    expect(f.report().totals.violations).toBe(0);
  });

  for (const version of ['v1', 'v2'] as const) {
    it(`every action round-trips in protocol ${version}`, async () => {
      const f = await fleet(3, version);
      const c = await client(version);
      expect(await c.discover()).toHaveLength(3);
      const [a, b, d] = f.identities() as [string, string, string];
      const token = 's3cret';
      const inv = await c.rpc(a, 'rpcutil', 'inventory', {});
      expect(inv.data).toMatchObject({ main_collective: 'provisioning', upgradable: true });
      const jwt = await c.rpc(a, 'choria_provision', 'jwt', { token });
      expect((jwt.data as { jwt: string }).jwt).toMatch(/^ey/);
      const nonce = newRequestId();
      const ed = await c.rpc(a, 'choria_provision', 'gen25519', { nonce, token });
      expect((ed.data as { public_key: string }).public_key).toMatch(/^[0-9a-f]{64}$/);
      const csr = await c.rpc(a, 'choria_provision', 'gencsr', { cn: a, token });
      expect((csr.data as { csr: string }).csr).toContain('BEGIN CERTIFICATE REQUEST');
      const conf = await c.rpc(a, 'choria_provision', 'configure', {
        token,
        config: JSON.stringify({ 'plugin.choria.server.provision': 'false', identity: a }),
      });
      expect((conf.data as { message: string }).message).toMatch(/^Wrote 3 lines to /);
      const rs = await c.rpc(a, 'choria_provision', 'restart', { token, splay: 1 });
      expect((rs.data as { message: string }).message).toBe('Restarting Choria Server after 2s');
      const up = await c.rpc(b, 'choria_provision', 'release_update', {
        token,
        repository: 'https://repo.example.net/',
        version: '0.30.0',
      });
      expect((up.data as { message: string }).message).toMatch(/^Restarting Choria Server after/);
      const sd = await c.rpc(d, 'choria_provision', 'shutdown', { token });
      expect((sd.data as { message: string }).message).toMatch(/^Shutting Choria Server down after \ds$/);
      await f.waitFor(
        (fl) => fl.countByState().provisioned === 1 && fl.countByState().shutdown === 1,
        10_000,
        'restart and shutdown',
      );
      await f.waitFor((fl) => fl.node(b)?.state.version === '0.30.0', 10_000, 'update');
      const r = f.report();
      expect(r.nodes.find((n) => n.identity === a)).toMatchObject({
        configuredCount: 1,
        restartCount: 1,
        protocol: version,
      });
    });
  }

  it('a wrong token is refused with the upstream message', async () => {
    const f = await fleet(1, 'v1');
    const c = await client('v1');
    const id = f.identities()[0] as string;
    await expect(c.rpc(id, 'choria_provision', 'jwt', { token: 'nope' })).rejects.toThrow(RpcAbortedError);
    await expect(c.rpc(id, 'choria_provision', 'jwt', { token: 'nope' })).rejects.toThrow(
      /Incorrect provision token supplied/,
    );
  });

  it('an RPC to an absent node times out with a clear error within its timeout', async () => {
    const c = await client('v1');
    const t = Date.now();
    await expect(c.rpc('absent.example.net', 'rpcutil', 'inventory', {}, { timeoutMs: 500 })).rejects.toThrow(
      RpcTimeoutError,
    );
    expect(Date.now() - t).toBeLessThan(1500);
  });

  it('a v1 client gets no answer from v2 nodes (the mismatch is silent on the wire, recorded by the simulator)', async () => {
    const f = await fleet(5, 'v2');
    const c = await client('v1');
    expect(await c.discover({ timeoutMs: 1000, initialWaitMs: 500 })).toEqual([]);
    expect(f.report().totals.violationsByKind['protocol-version']).toBeGreaterThan(0);
  });
});

// release_update that takes its time (updateMs): the agent mutex is held while the release is
// downloaded, so every other choria_provision action of the node waits for it, and a second
// release_update meanwhile is a provisioner mistake (a real server would install it twice).
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { SimulatedFleet } from '../src/fleet.js';
import { MiniClient } from './support/mini-client.js';

const TOKEN = 's3cret';
const UPDATE = { token: TOKEN, repository: 'https://repo.example.net/choria', version: '0.30.0' };

let server: RunningNatsServer;
let nc: NatsConnection;
let client: MiniClient;
let fleet: SimulatedFleet;

beforeAll(async () => {
  server = await startNatsServer({ jetstream: false });
  nc = await connect({ servers: server.url });
  client = new MiniClient(nc);
  fleet = await SimulatedFleet.start({
    servers: [server.url],
    name: 'updatetime',
    count: 2,
    identityPattern: 'upd{i}.example.net',
    token: TOKEN,
    upgradable: true,
    updateMs: 1_500,
    timeScale: 0.01,
    seed: 3,
  });
  await fleet.waitForBooted(5_000);
});

afterAll(async () => {
  await fleet?.stop();
  await nc?.close();
  await server?.stop();
});

describe('release_update with a download time', () => {
  it('answers after the download; the agent answers nothing else meanwhile, discovery still works', async () => {
    const started = performance.now();
    const update = client.rpc('upd1.example.net', 'v1', 'choria_provision', 'release_update', UPDATE, {}, 5_000);
    await new Promise((r) => setTimeout(r, 200));
    const jwt = await client.rpc('upd1.example.net', 'v1', 'choria_provision', 'jwt', { token: TOKEN }, {}, 600);
    expect(jwt.reply).toBeUndefined();
    const ping = await client.rpc('upd1.example.net', 'v1', 'rpcutil', 'ping', {}, {}, 1_000);
    expect(ping.reply?.statuscode).toBe(0);
    const done = await update;
    expect(done.reply).toMatchObject({ statuscode: 0, data: { message: 'Restarting Choria Server after 2s' } });
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_400);
    expect(fleet.violationCount('update-while-updating')).toBe(0);
  });

  it('records a release_update sent while an earlier one is still downloading', async () => {
    const first = client.rpc('upd2.example.net', 'v1', 'choria_provision', 'release_update', UPDATE, {}, 5_000);
    await new Promise((r) => setTimeout(r, 200));
    const second = client.rpc('upd2.example.net', 'v1', 'choria_provision', 'release_update', UPDATE, {}, 3_000);
    expect((await first).reply?.statuscode).toBe(0);
    await second;
    expect(fleet.violationCount('update-while-updating')).toBe(1);
  });
});

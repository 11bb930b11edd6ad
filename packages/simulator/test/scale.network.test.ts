// 2,000 simulated servers in one process start and answer one discovery within a few seconds.
import { connect, type NatsConnection } from 'nats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, type RunningNatsServer } from '@choria-provisioner/test-support/nats-server';
import { SimulatedFleet } from '../src/fleet.js';
import { buildRequest, decodeReply, DISCOVERY_FIELD } from './support/mini-client.js';

let server: RunningNatsServer;
let nc: NatsConnection;

beforeAll(async () => {
  server = await startNatsServer({ jetstream: false });
  nc = await connect({ servers: server.url });
});

afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

describe('scale', () => {
  it('starts 2,000 nodes and every one answers discovery', async () => {
    const t0 = Date.now();
    const fleet = await SimulatedFleet.start({
      servers: [server.url],
      name: 'scale',
      count: 2000,
      seed: 11,
      eventFormat: 'none',
    });
    const startMs = Date.now() - t0;
    try {
      const req = buildRequest({ version: 'v1', agent: 'discovery', messageField: DISCOVERY_FIELD.v1 });
      const seen = new Set<string>();
      const sub = nc.subscribe(req.replyTo ?? '');
      const t1 = Date.now();
      nc.publish('provisioning.broadcast.agent.discovery', req.data);
      const timer = setTimeout(() => sub.unsubscribe(), 10_000);
      for await (const m of sub) {
        seen.add(decodeReply(m.data).sender);
        if (seen.size === 2000) break;
      }
      clearTimeout(timer);
      const discoveryMs = Date.now() - t1;
      expect(seen.size).toBe(2000);
      expect(seen.has('node-1.example.net') && seen.has('node-2000.example.net')).toBe(true);
      expect(startMs + discoveryMs).toBeLessThan(10_000);
      expect(fleet.summary().totals.rpcCounts['discovery']).toBe(2000);
    } finally {
      await fleet.stop();
    }
  });
});

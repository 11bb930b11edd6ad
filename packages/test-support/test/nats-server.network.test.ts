import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, StringCodec } from 'nats';
import { startNatsServer, type RunningNatsServer } from '../src/nats-server.js';

describe('test nats-server harness', () => {
  let srv: RunningNatsServer;
  beforeAll(async () => {
    srv = await startNatsServer();
  });
  afterAll(async () => {
    await srv.stop();
  });

  it('serves core NATS request/reply and JetStream on a private loopback port', async () => {
    expect(srv.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    const nc = await connect({ servers: srv.url });
    const sc = StringCodec();
    const sub = nc.subscribe('smoke.echo');
    void (async () => {
      for await (const m of sub) m.respond(sc.encode(`echo:${sc.decode(m.data)}`));
    })();
    const reply = await nc.request('smoke.echo', sc.encode('hi'), { timeout: 2000 });
    expect(sc.decode(reply.data)).toBe('echo:hi');
    const jsm = await nc.jetstreamManager();
    const info = await jsm.getAccountInfo();
    expect(info.limits).toBeDefined();
    await nc.close();
  });
});

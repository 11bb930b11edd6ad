// Floods from the provisioning account against a stock nats-server with JetStream (the history in
// a bucket), small enough for CI; bench/flood.mjs runs the full sizes. Anyone holding a waiting
// server's image can publish there, so a flood of harmless messages must cost the fleet little:
//
// - thousands of startup events for valid names that never answer take no worker, no queue slot
//   and no history record, and a real server announced right after them is provisioned at once;
// - stray replies, replies from another identity, refused identities and a 600,000-character
//   status message write a few log lines and a sum per kind, none of them long.
import { Writable } from 'node:stream';
import { connect } from 'nats';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { FleetHarness, metricValue } from '@choria-provisioner/test-support/fleet';
import { until } from '@choria-provisioner/test-support/wait';
import { createLogger } from '../../packages/core/src/util/logger.js';
import { encodeLifecycleEvent, newLifecycleEvent } from '../../packages/core/src/choria/lifecycle.js';
import { codecFor } from '../../packages/core/src/choria/protocol/codec.js';
import { nowNanoseconds } from '../../packages/core/src/choria/protocol/ids.js';
import { startResponders } from '../../packages/core/test/choria/support/responder.js';
import { discoveryResponder } from '../../packages/core/test/choria/support/discovery-responder.js';

const h = new FleetHarness();
afterEach(() => h.cleanup());

const STARTUP = 'choria.lifecycle.event.startup.provision_mode_server';
const startup = (identity: string): string =>
  encodeLifecycleEvent(
    newLifecycleEvent({ type: 'startup', identity, component: 'provision_mode_server', version: '0.30.2' }),
  );

/** A text log captured as an operator's file would hold it. */
function capturedLog(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({ write: (chunk: Buffer, _enc, done) => ((text += chunk.toString('utf8')), done()) });
  return { stream, text: () => text };
}

const lines = (text: string): string[] => text.split('\n').filter((l) => l !== '');

/** A provisioner on `url` logging into a captured text log, started, its subscriptions on the broker; and a publisher. */
async function floodedSite(url: string, yaml: string) {
  const log = capturedLog();
  const registry = new Registry();
  const p = h.provisioner(url, yaml, { registry, logger: createLogger({ stream: log.stream, site: 'test' }) });
  await p.start();
  await p.client?.nats.flush();
  const nc = await connect({ servers: url });
  h.onCleanup(() => nc.close());
  return { p, log, registry, nc };
}

describe('a flood from the provisioning account', () => {
  it('of silent names delays no real server and leaves no record or log line per name', async () => {
    const s = await h.broker({ jetstream: true, choriaAccounts: false });
    const { p, log, registry, nc } = await floodedSite(s.url, 'history_store: kv\nworkers: 8\ninterval: 1m\n');
    const logBefore = log.text().length;

    const FLOOD = 5_000;
    for (let i = 0; i < FLOOD; i++) nc.publish(STARTUP, startup(`flood-${String(i).padStart(6, '0')}.example.net`));
    await nc.flush();

    // a real server boots right after and announces itself: provisioned as if there were no flood
    const fleet = await h.fleet(s.url, { count: 1, identityPattern: 'real-{i}.example.net', eventFormat: 'choria' });
    await fleet.waitForAllProvisioned(15_000);

    // every forged name was asked once and dropped: none took work, none has a record
    await until(
      'every forged name asked',
      async () => (await metricValue(registry, 'choria_provisioner_candidates', { site: 'test' })) === 0,
      20_000,
    );
    const unanswered = await metricValue(registry, 'choria_provisioner_candidates_ended', {
      site: 'test',
      how: 'unanswered',
    });
    const crowded = await metricValue(registry, 'choria_provisioner_candidates_ended', {
      site: 'test',
      how: 'crowded_out',
    });
    expect(unanswered + crowded).toBe(FLOOD);
    const status = p.status({ limit: 10_000 });
    expect(status.hosts.map((x) => x.identity)).toEqual(fleet.identities());
    expect(status.history?.nodes).toBe(1);
    expect(await metricValue(registry, 'choria_provisioner_queue_full', { site: 'test' })).toBe(0);
    // a few lines for the real server, none per forged name
    const written = lines(log.text().slice(logBefore));
    expect(written.filter((l) => l.includes('flood-'))).toEqual([]);
    expect(written.length).toBeLessThan(40);
  }, 60_000);

  it('of stray replies, replies from other senders, refused names and a huge status message stays within the log budget', async () => {
    const s = await h.broker({ jetstream: true, choriaAccounts: false });
    const N = 2_000;
    const others = Array.from({ length: N }, (_, i) => `other-${i}.example.net`);
    // a forged server answers every request with status 5 and a 600,000-character message
    const responders = await startResponders({
      url: s.url,
      identities: ['huge-1.example.net'],
      onRpc: (ctx) => ({ action: ctx.request.action, statuscode: 5, statusmsg: 'x'.repeat(600_000), data: {} }),
    });
    h.onCleanup(() => responders.close());
    // and every request to a real node gets N more replies from other valid identities
    const crowded = await startResponders({
      url: s.url,
      identities: ['crowded-1.example.net'],
      extraSenders: { 'crowded-1.example.net': others },
    });
    h.onCleanup(() => crowded.close());
    // and someone answers the first discovery with N replies to request ids never sent
    const codec = codecFor('v1');
    let flooded = false;
    const stray = await discoveryResponder(s.url, (req) => {
      if (flooded) return;
      flooded = true;
      const replyTo = req.headers.replyTo as string;
      const prefix = replyTo.slice(0, replyTo.length - req.id.length);
      for (let i = 0; i < N; i++) {
        const requestId = `ffff${String(i).padStart(28, '0')}`;
        const reply = codec.encodeReply({
          requestId,
          sender: 'huge-1.example.net',
          agent: 'discovery',
          timeNs: nowNanoseconds(),
          body: 'pong',
        });
        stray.publish(`${prefix}${requestId}`, reply.transportJson);
      }
    });
    h.onCleanup(() => stray.close());

    const yaml = 'history_store: kv\nworkers: 4\ninterval: 1m\nquarantine_after: 0\n';
    const { p, log, registry, nc } = await floodedSite(s.url, yaml);
    for (let i = 0; i < N; i++) nc.publish(STARTUP, startup(`bad name ${i}`));
    await nc.flush();
    await until(
      'the forged server tried',
      () => p.status().hosts.some((x) => x.identity === 'huge-1.example.net' && x.state === 'failed'),
      20_000,
      { tick: () => p.discover(), stepMs: 500 },
    );
    await until(
      'every refusal counted',
      async () =>
        (await metricValue(registry, 'choria_provisioner_refused_identities', { site: 'test', source: 'event' })) === N,
      10_000,
    );
    await p.stop(); // writes the sums of the windows still open

    const written = lines(log.text());
    expect(log.text().length).toBeLessThan(200_000);
    expect(written.length).toBeLessThan(500);
    expect(Math.max(...written.map((l) => Buffer.byteLength(l)))).toBeLessThan(4_096);
    // what was left out is summed up by kind
    expect(log.text()).toMatch(/\d+ more refused identities in the last 10 s/);
    expect(log.text()).toMatch(/\d+ more replies from a sender the request was not for in the last 10 s/);
    expect(log.text()).toMatch(/… \(600\d{3} characters\)/);
  }, 60_000);
  it('refuses an identity equal but for case to a known node, unless the site allows such twins', async () => {
    const s = await h.broker({ jetstream: true, choriaAccounts: false });
    const fleet = await h.fleet(s.url, { count: 1, identityPattern: 'case-{i}.example.net' });
    const { p, log, registry, nc } = await floodedSite(s.url, 'history_store: kv\nworkers: 2\ninterval: 1m\n');
    await fleet.waitForAllProvisioned(15_000);
    nc.publish(STARTUP, startup('CASE-1.example.net'));
    await nc.flush();
    await until(
      'the twin refused',
      async () =>
        (await metricValue(registry, 'choria_provisioner_refused_identities', { site: 'test', source: 'event' })) === 1,
      10_000,
    );
    expect(log.text()).toContain('it equals the known node case-1.example.net but for case');
    expect(p.status().hosts.map((x) => x.identity)).toEqual(['case-1.example.net']);
    expect(
      await metricValue(registry, 'choria_provisioner_candidates_ended', { site: 'test', how: 'unanswered' }),
    ).toBe(0);

    // allowed: the twin is a candidate like any unknown name (here it never answers)
    const allowing = h.provisioner(s.url, 'history_store: kv\nworkers: 2\ninterval: 1m\nidentity_case_twins: true\n', {
      registry: new Registry(),
      identity: 'other.example.net',
    });
    await allowing.start();
    await allowing.client?.nats.flush();
    nc.publish(STARTUP, startup('CASE-1.example.net'));
    await nc.flush();
    await until(
      'the twin asked',
      async () =>
        (await metricValue(allowing.metrics.registry, 'choria_provisioner_candidates_ended', {
          site: 'test',
          how: 'unanswered',
        })) === 1,
      10_000,
    );
  }, 60_000);
});

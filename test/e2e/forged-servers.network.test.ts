// Forged servers against a stock nats-server (JetStream on, default limits): anyone on the
// provisioning account can pose as a server in provisioning mode, with any identity, reply and
// event. Here they send startup events and discovery replies with identities no node can have (one
// of 4,100 characters, which as a subject would make the broker close the connection; wildcards;
// spaces; terminal control sequences; a line break that would forge a log line; a regular
// expression), replies from senders like that, a status message with control sequences, and an
// inventory nested deeper than any real one. A well-behaved server announces itself beside them.
//
// The provisioner must keep its broker connection (no disconnect at all), provision the real
// server, list none of the forged identities, send nothing to them or to a wildcard subject,
// discover with none of them as a filter, ask the deep inventory once, and show every text with
// visible escapes in its log, /status and `choria-provisioner status`.
import { Writable } from 'node:stream';
import { connect, type NatsConnection } from 'nats';
import { afterEach, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { SimulatedFleet } from '../../packages/simulator/src/index.js';
import { Provisioner } from '../../packages/core/src/provisioner/provisioner.js';
import { createLogger } from '../../packages/core/src/util/logger.js';
import { monitorRoutes, startMonitorServer } from '../../packages/core/src/monitor/index.js';
import { encodeLifecycleEvent, newLifecycleEvent } from '../../packages/core/src/choria/lifecycle.js';
import { whyNotIdentity } from '../../packages/core/src/choria/identity.js';
import { codecFor } from '../../packages/core/src/choria/protocol/codec.js';
import { statusCommand } from '../../packages/cli/src/commands/status.js';
import { startNatsServer } from '@choria-provisioner/test-support/nats-server';
import { testConfig, testSettings } from '@choria-provisioner/test-support/settings';
import { sleep, until } from '@choria-provisioner/test-support/wait';
import { discoveryResponder } from '../../packages/core/test/choria/support/discovery-responder.js';
import { startResponders } from '../../packages/core/test/choria/support/responder.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const FORGED_LOG_LINE = '2026-12-06T17:00:00.000Z ERROR forged: the provisioner was compromised';
/** Identities no node can have. */
const HOSTILE = [
  'x'.repeat(4100),
  '*',
  '>',
  'a.*',
  'a b',
  '',
  '/./',
  'evil\u001b[2J\u001b[31mnode\u0007',
  `line\n${FORGED_LOG_LINE}`,
  `cr\r${FORGED_LOG_LINE}`,
  'a..b',
  'csi\u009b31m',
];
/** Valid identities with hostile behaviour. */
const STATUS_NODE = 'status-1.example.net';
const DEEP_NODE = 'deep-1.example.net';
// with characters a reader cannot see: a zero-width space, a soft hyphen, a tag character
const STATUS_TEXT = 'refused \u001b[2J\u001b[1;31mCLEARED\u0007 by the\u200b no\u00adde\u{e0041}';
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

function nested(depth: number): unknown {
  let v: unknown = 'bottom';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

/** Every subject published on the broker, and the identity filters of every discovery. */
async function observe(url: string): Promise<{ nc: NatsConnection; subjects: string[]; filters: string[][] }> {
  const nc = await connect({ servers: url });
  const subjects: string[] = [];
  const filters: string[][] = [];
  const codec = codecFor('v1');
  nc.subscribe('>', {
    callback: (_err, msg) => {
      subjects.push(msg.subject);
      if (msg.subject === 'provisioning.broadcast.agent.discovery') {
        try {
          filters.push([...codec.decodeRequest(msg.data).filter.identity]);
        } catch {
          // not ours
        }
      }
    },
  });
  await nc.flush();
  return { nc, subjects, filters };
}

describe('forged servers in provisioning mode', () => {
  it('cannot take the provisioner off the broker, forge its log, reach its status or its sends', async () => {
    const srv = await startNatsServer({ jetstream: true });
    cleanups.push(() => srv.stop());
    const watch = await observe(srv.url);
    cleanups.push(() => watch.nc.close());

    // forged discovery replies, and forged nodes with valid identities that misbehave
    const forger = await discoveryResponder(srv.url, (_req, send) => HOSTILE.forEach((id) => send(id)));
    cleanups.push(() => forger.close());
    const responders = await startResponders({
      url: srv.url,
      identities: [STATUS_NODE, DEEP_NODE],
      extraSenders: { [STATUS_NODE]: HOSTILE.slice(1, 8) },
      onRpc: (ctx) => {
        if (ctx.request.action === 'inventory') {
          const facts = ctx.identity === DEEP_NODE ? nested(600) : { role: 'web' };
          return {
            action: 'inventory',
            statuscode: 0,
            statusmsg: 'OK',
            data: { agents: ['choria_provision'], version: '0.30.2', upgradable: false, facts },
          };
        }
        return { action: ctx.request.action, statuscode: 1, statusmsg: STATUS_TEXT, data: {} };
      },
    });
    cleanups.push(() => responders.close());

    // the text log, as an operator's terminal shows it
    let log = '';
    const terminal = new Writable({ write: (chunk: Buffer, _enc, done) => ((log += chunk.toString('utf8')), done()) });
    const registry = new Registry();
    const config = testConfig('history_store: kv\nworkers: 4\ninterval: 1m\nquarantine_after: 0\n');
    const p = new Provisioner({
      config,
      choria: testSettings(srv.url, config),
      registry,
      logger: createLogger({ stream: terminal, loglevel: 'debug', site: 'test' }),
      helper: (req) => ({ configuration: { identity: req.identity, 'plugin.choria.server.provision': 'false' } }),
    });
    cleanups.push(() => p.stop());
    const monitor = await startMonitorServer({ port: 0, host: '127.0.0.1', registry, ...monitorRoutes([p]) });
    cleanups.push(() => monitor.close());
    await p.start();
    // its subscriptions are in place on the broker before anything is published
    await p.client?.nats.flush();

    // startup events with every hostile identity, in both formats, repeated
    const events = await connect({ servers: srv.url });
    cleanups.push(() => events.close());
    for (let round = 0; round < 3; round++) {
      for (const identity of HOSTILE) {
        for (const format of ['choria', 'cloudevents'] as const) {
          events.publish(
            'choria.lifecycle.event.startup.provision_mode_server',
            encodeLifecycleEvent(
              newLifecycleEvent({
                type: 'startup',
                identity,
                component: 'provision_mode_server',
                version: '0.30.2',
                format,
              }),
            ),
          );
        }
      }
    }
    await events.flush();

    // a well-behaved server boots beside them and announces itself
    const fleet = await SimulatedFleet.start({
      servers: [srv.url],
      count: 1,
      identityPattern: 'good-{i}.example.net',
      token: '',
      timeScale: 0.01,
      control: false,
      eventFormat: 'choria',
    });
    cleanups.push(() => fleet.stop());
    await fleet.waitForAllProvisioned(20_000);
    await p.discover();
    await until(
      'the forged nodes tried',
      () =>
        ['failed'].includes(p.status().hosts.find((h) => h.identity === STATUS_NODE)?.state ?? '') &&
        p.status().hosts.find((h) => h.identity === DEEP_NODE)?.state === 'failed',
      20_000,
    );
    // the history writes and any retry loop would show within this
    await sleep(6_000);

    // the broker never dropped the connection, and the real server was provisioned
    expect(p.client?.link.state.changes).toBe(0);
    expect(p.status().connected).toBe(true);

    // none of the hostile identities is listed; every listed identity passes the rule
    const status = p.status();
    const listed = status.hosts.map((h) => h.identity);
    for (const id of HOSTILE) expect(listed).not.toContain(id);
    for (const id of listed) expect(whyNotIdentity(id)).toBeUndefined();
    expect(listed.sort()).toEqual([DEEP_NODE, ...fleet.identities(), STATUS_NODE].sort());

    // nothing was sent to a hostile identity or to a wildcard subject; no discovery used one as a filter
    // (the JetStream API's consumer subjects name a filter, `<site>.>`, as their last tokens)
    for (const subject of watch.subjects.filter((x) => !x.startsWith('$JS.API.CONSUMER.'))) {
      expect(
        subject.split('.').some((t) => t === '*' || t === '>' || t === ''),
        subject,
      ).toBe(false);
      expect(subject.length).toBeLessThan(1024);
    }
    expect(
      watch.subjects
        .filter((s) => s.startsWith('provisioning.node.'))
        .map((s) => s.slice('provisioning.node.'.length))
        .every((id) => whyNotIdentity(id) === undefined),
    ).toBe(true);
    for (const f of watch.filters) for (const id of f) expect(HOSTILE).not.toContain(id);

    // the deep inventory was asked for once: a reply that cannot be read is not asked again
    const deepTries = watch.subjects.filter((s) => s === `provisioning.node.${DEEP_NODE}`).length;
    expect(deepTries).toBe(1);
    expect(status.hosts.find((h) => h.identity === DEEP_NODE)?.lastError).toMatch(/1 try, last: .*more than 512 deep/);

    // refusals were counted, by where they came from
    const metrics = await registry.metrics();
    for (const source of ['event', 'discovery', 'reply'])
      expect(metrics).toMatch(
        new RegExp(`choria_provisioner_refused_identities\\{site="test",source="${source}"\\} [1-9]`),
      );

    // /status and the command line show the node's status message with visible escapes
    const statusText = await (await fetch(`${monitor.url}/status`)).text();
    expect(statusText).not.toMatch(RAW);
    expect(statusText).toContain('\\\\u001b[2J');
    const out: string[] = [];
    expect(
      await statusCommand({ url: monitor.url, json: false }, { out: (t) => out.push(t), err: (t) => out.push(t) }),
    ).toBe(0);
    const printed = out.join('\n');
    expect(printed).toContain(STATUS_NODE);
    expect(printed).toContain('\\u001b[2J');
    expect(printed).toContain('the\\u200b no\\u00adde\\udb40\\udc41');
    expect(printed).not.toMatch(RAW);

    // the log: no raw control character, every line a record of its own (none forged)
    expect(log).toContain('Refused the node identity');
    expect(log).not.toMatch(RAW);
    const lines = log.split('\n').filter((l) => l !== '');
    for (const line of lines)
      expect(line, line.slice(0, 200)).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z (DEBUG|INFO |WARN |ERROR) /);
    expect(lines.some((l) => l.startsWith('2026-12-06T17:00:00.000Z'))).toBe(false);
    // the node's status message reached the log, escaped
    expect(log).toContain('refused \\u001b[2J\\u001b[1;31mCLEARED\\u0007 by the\\u200b no\\u00adde\\udb40\\udc41');
    // refusals are written within the log's budget, however often they came
    const refusedLines = lines.filter((l) => l.includes('Refused the node identity') && l.includes('xxxxxxxx'));
    expect(refusedLines.length).toBeGreaterThan(0);
    expect(refusedLines.length).toBeLessThanOrEqual(3); // once from events, once from discovery, maybe once from a reply
  }, 90_000);
});

// Interop rows (e)-(j): what goes wrong in production, against real go-choria servers and a real
// Choria Broker: the broker restarting mid-run, leader election fail-over, active/active instances
// sharing one identity, the node history in the choria account, two sites in one process, an
// active/active member with a slow helper whose queue an idle member takes over. Ours and
// the upstream provisioner side by side where upstream has the feature.
import { describe, expect, it } from 'vitest';
import { sleep, until } from '@choria-provisioner/test-support/wait';
import {
  RESTART_DOWN_MS,
  interopSuite,
  labServers,
  restartMidFlow,
  rowBound,
  rowCases,
  settleRow,
  siteHistory,
  waitLog,
  waitProvisioned,
  waitWaiting,
  withLab,
} from '@choria-provisioner/test-support/lab/index';

const { available, kinds: KINDS, cases: CASES } = interopSuite();
// rows of features only this project has run whatever LAB_KINDS says
const OURS = rowCases(['ours']);
const LEADER = 'Became leader after winning election';

describe.skipIf(!available)('interop: failures and coordination with real go-choria servers', () => {
  // the broker restart is this row's flow: it runs once per provisioner, with no further variant
  it.each(rowCases(KINDS, ['plain']))(
    '(e) broker restarted mid-run: every node provisioned within 10 s of its return ($label)',
    async (c) => {
      const { kind } = c;
      const n = labServers();
      await withLab(`broker-restart-${kind}`, async (l) => {
        const b = await l.broker();
        const url = `nats://127.0.0.1:${b.port}`;
        const fleet = await l.fleet({ prefix: 'brst', count: n, withConfig: true, provisioningUrls: [url] });
        await fleet.start();
        await waitWaiting(fleet);
        await l.provisioner({
          kind,
          name: kind,
          identity: 'provisioner.lab.example',
          sites: [{ site: 'lab', brokerUrls: [url] }],
        });
        // mid-run: the first node is being configured, the rest are queued or in flight
        await until('the first configure request', () => fleet.states().some((x) => x.configures > 0), 60_000, {
          stepMs: 100,
        });
        await b.stop();
        const before = fleet.states().filter((s) => s.provisioned).length;
        await sleep(RESTART_DOWN_MS);
        await b.start();
        const back = Date.now();
        // waits past the 10 s limit so the result says how long it really took
        const bound = 60_000;
        const r = await waitProvisioned([fleet], bound, back);
        const restart = restartMidFlow(c, b, [fleet], back);
        await settleRow({
          name: '(e) broker restarted mid-run',
          id: 'e-broker-restart',
          c,
          r,
          boundMs: bound,
          restart,
          limitMs: 10_000,
          extra: { provisionedBeforeStop: before, measuredFrom: 'broker return' },
        });
      });
    },
  );

  it.each(CASES)(
    '(f) leader election: the leader is SIGKILLed, the standby takes over and provisions ($label)',
    async (c) => {
      const { kind } = c;
      const n = labServers();
      await withLab(`election-${c.slug}`, async (l) => {
        const b = await l.broker({ electionTtl: '10s' });
        const url = `nats://127.0.0.1:${b.port}`;
        const site = { site: 'lab', brokerUrls: [url], yaml: { leader_election: true } };
        const a = await l.provisioner({ kind, name: `${kind}-a`, identity: 'prov-a.lab.example', sites: [site] });
        await waitLog(`${a.name} to lead`, () => a.log(), LEADER, 90_000);
        const s = await l.provisioner({ kind, name: `${kind}-b`, identity: 'prov-b.lab.example', sites: [site] });
        await sleep(3_000);
        expect(s.log(), `${s.name} must not lead while ${a.name} does`).not.toContain(LEADER);
        await a.stop('SIGKILL');
        const killed = Date.now();
        const fleet = await l.fleet({ prefix: 'elec', count: n, withConfig: true, provisioningUrls: [url] });
        const restart = restartMidFlow(c, b, [fleet], killed);
        await fleet.start();
        // the key lives until the bucket's 10 s TTL, then the standby's next campaign wins
        const bound = rowBound(n, 60_000);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, killed);
        await settleRow({
          name: '(f) leader election fail-over',
          id: 'f-leader-failover',
          c,
          r,
          boundMs: bound,
          restart,
          extra: { measuredFrom: 'leader SIGKILL', takeoverMs: takeover(s.log(), killed) },
        });
        expect(s.log()).toContain(LEADER);
      });
    },
  );

  it.each(OURS)(
    '(g) active/active: two instances sharing one certificate, one SIGKILLed mid-run (upstream has no active/active) ($label)',
    async (c) => {
      const n = labServers();
      await withLab(`active-active-${c.slug}`, async (l) => {
        const b = await l.broker();
        const url = `nats://127.0.0.1:${b.port}`;
        const site = { site: 'lab', brokerUrls: [url], yaml: { coordination: 'active_active' } };
        // the same identity, so the same client certificate: the node lock cannot tell them apart
        const one = await l.provisioner({
          kind: 'ours',
          name: 'aa-1',
          identity: 'provisioner.lab.example',
          sites: [site],
        });
        const two = await l.provisioner({
          kind: 'ours',
          name: 'aa-2',
          identity: 'provisioner.lab.example',
          sites: [site],
        });
        await sleep(5_000);
        const fleet = await l.fleet({ prefix: 'aa', count: n, withConfig: true, provisioningUrls: [url] });
        const t0 = Date.now();
        const restart = restartMidFlow(c, b, [fleet], t0);
        await fleet.start();
        // killed at the first configure; after a broker restart, as soon as the broker is back
        if (c.variant === 'plain')
          await until('the first configure request', () => fleet.states().some((x) => x.configures > 0), 60_000, {
            stepMs: 100,
          });
        else await restart.done();
        await one.stop('SIGKILL');
        const doneAtKill = new Set(
          fleet
            .states()
            .filter((x) => x.provisioned)
            .map((x) => x.identity),
        );
        const bound = rowBound(n, 60_000);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        // A node the killed instance configured but never restarted is configured again by the
        // survivor (with one shared identity the node lock cannot hold it back, and that first
        // configuration never took effect): the one second configure allowed. Anything else
        // configured twice means the two live instances both worked on it.
        const retaken = r.states.filter(
          (x) =>
            !doneAtKill.has(x.identity) &&
            x.helperRunBy.includes(one.name) &&
            x.helperRunBy.includes(two.name) &&
            x.configures === 2,
        );
        const twice = r.configuredTwice.filter((id) => !retaken.some((x) => x.identity === id));
        await settleRow({
          name: '(g) active/active with one instance killed',
          id: 'g-active-active',
          c,
          r: { ...r, configuredTwice: twice },
          boundMs: bound,
          restart,
          extra: { killed: one.name, retakenAfterKill: retaken.length },
        });
        // the split worked: both instances provisioned part of the fleet
        const byOne = r.states.filter((x) => x.helperRunBy.includes(one.name)).length;
        const byTwo = r.states.filter((x) => x.helperRunBy.includes(two.name)).length;
        expect(byOne, 'nodes the first instance worked on before it was killed').toBeGreaterThan(0);
        expect(byTwo, 'nodes the second instance worked on').toBeGreaterThan(0);
        expect(two.gone()).toBe(false);
      });
    },
  );

  it.each(OURS)(
    '(h) node history: with history_store kv the history is opened over the choria account (upstream keeps none) ($label)',
    async (c) => {
      const n = labServers();
      await withLab(`history-${c.slug}`, async (l) => {
        const b = await l.broker();
        const url = `nats://127.0.0.1:${b.port}`;
        const fleet = await l.fleet({ prefix: 'hist', count: n, withConfig: true, provisioningUrls: [url] });
        const p = await l.provisioner({
          kind: 'ours',
          name: 'ours',
          identity: 'provisioner.lab.example',
          sites: [{ site: 'lab', brokerUrls: [url] }],
        });
        const t0 = Date.now();
        const restart = restartMidFlow(c, b, [fleet], t0);
        await fleet.start();
        const bound = rowBound(n);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        await settleRow({ name: '(h) node history', id: 'h-history', c, r, boundMs: bound, restart });
        const history = await siteHistory(p, n);
        expect(history, JSON.stringify(history)).toMatchObject({
          store: 'kv',
          connection: 'choria',
          bucket: 'CHORIA_PROVISIONER_HISTORY',
        });
        expect(history?.nodes).toBeGreaterThanOrEqual(n);
      });
    },
  );

  it.each(OURS)(
    '(i) two sites in one process, each behind its own broker (upstream runs one site per process) ($label)',
    async (c) => {
      const n = labServers();
      await withLab(`two-sites-${c.slug}`, async (l) => {
        const east = await l.broker({ name: 'broker-east' });
        const west = await l.broker({ name: 'broker-west' });
        const eastUrl = `nats://127.0.0.1:${east.port}`;
        const westUrl = `nats://127.0.0.1:${west.port}`;
        const fe = await l.fleet({ prefix: 'east', count: n, withConfig: true, provisioningUrls: [eastUrl] });
        const fw = await l.fleet({ prefix: 'west', count: n, withConfig: true, provisioningUrls: [westUrl] });
        await l.provisioner({
          kind: 'ours',
          name: 'ours',
          identity: 'provisioner.lab.example',
          sites: [
            { site: 'east', brokerUrls: [eastUrl] },
            { site: 'west', brokerUrls: [westUrl] },
          ],
        });
        const t0 = Date.now();
        // one site's broker restarts; the other site goes on
        const restart = restartMidFlow(c, east, [fe], t0);
        await Promise.all([fe.start(), fw.start()]);
        const bound = rowBound(2 * n);
        const r = await waitProvisioned([fe, fw], bound + restart.extraWaitMs, t0);
        await settleRow({ name: '(i) two sites in one process', id: 'i-two-sites', c, r, boundMs: bound, restart });
      });
    },
  );
  it.each(OURS)(
    '(j) active/active hand-over: an idle member takes queued nodes from a member with a slow helper ($label)',
    async (c) => {
      // at least 20 servers: the slow member must have queued nodes of its own share to hand over,
      // and rendezvous hashing leaves it 2 or fewer of 10 in about one run of 18 (of 20: 1 in 5,000)
      const n = Math.max(labServers(), 20);
      await withLab(`handover-${c.slug}`, async (l) => {
        const b = await l.broker();
        const url = `nats://127.0.0.1:${b.port}`;
        // every server waits before the instances start, so the first discovery queues the slow
        // member's whole share at once: one worker and a helper that takes 2 s per node
        const fleet = await l.fleet({ prefix: 'ho', count: n, withConfig: true, provisioningUrls: [url] });
        await fleet.start();
        await waitWaiting(fleet, 60_000 + 300 * n);
        const t0 = Date.now();
        const restart = restartMidFlow(c, b, [fleet], t0);
        const site = (workers: number) => ({
          site: 'lab',
          brokerUrls: [url],
          yaml: { coordination: 'active_active', workers },
        });
        const slow = await l.provisioner({
          kind: 'ours',
          name: 'ho-slow',
          identity: 'prov-slow.lab.example',
          sites: [site(1)],
          env: { LAB_HELPER_DELAY_MS: '2000' },
        });
        const fast = await l.provisioner({
          kind: 'ours',
          name: 'ho-fast',
          identity: 'prov-fast.lab.example',
          sites: [site(2)],
        });
        const bound = rowBound(n, 60_000);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        const bySlow = r.states.filter((x) => x.helperRunBy.includes(slow.name)).length;
        const byFast = r.states.filter((x) => x.helperRunBy.includes(fast.name)).length;
        await settleRow({
          name: '(j) active/active hand-over',
          id: 'j-handover',
          c,
          r,
          boundMs: bound,
          restart,
          extra: { bySlow, byFast },
        });
        // the slow member's share waited in its queue, and the fast one took part of it
        expect(slow.log()).toMatch(/Handed \d+ queued nodes over to active\/active member prov-fast\.lab\.example#/);
        expect(fast.log()).toMatch(
          /Took over \d+ of \d+ queued nodes from active\/active member prov-slow\.lab\.example#/,
        );
        expect(byFast, `nodes the fast member ran its helper for (the slow one: ${bySlow})`).toBeGreaterThan(bySlow);
      });
    },
  );

  it.each(CASES)(
    'three-broker cluster, Streams replicas 3, leader election: the broker the provisioner uses is SIGKILLed mid-run ($label)',
    async (c) => {
      const { kind } = c;
      const n = labServers();
      await withLab(`cluster-${c.slug}`, async (l) => {
        // resolves once the cluster has made its election bucket
        const brokers = await l.cluster(3);
        const urls = brokers.map((b) => `nats://127.0.0.1:${b.port}`);
        const fleet = await l.fleet({ prefix: 'clu', count: n, withConfig: true, provisioningUrls: urls });
        const p = await l.provisioner({
          kind,
          name: kind,
          identity: 'provisioner.lab.example',
          sites: [{ site: 'lab', brokerUrls: urls, yaml: { leader_election: true } }],
        });
        await waitLog(`${p.name} to lead`, () => p.log(), LEADER, 90_000);
        const port = connectedPort(p.log());
        const used = brokers.find((b) => b.port === port);
        if (used === undefined)
          throw new Error(
            `could not tell from ${p.name}'s log which cluster member it is connected to (ports ${brokers.map((b) => b.port).join(', ')})`,
          );
        const t0 = Date.now();
        await fleet.start();
        await until('the first configure request', () => fleet.states().some((x) => x.configures > 0), 60_000, {
          stepMs: 100,
        });
        await used.stop({ kill: true });
        // the restarted variant brings the killed member back while the flow goes on
        const restart = restartMidFlow(c, used, [fleet], t0, { when: () => true, alreadyStopped: true });
        const bound = rowBound(n, 90_000);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        await settleRow({
          name: 'three-broker cluster, provisioner broker killed',
          id: 'cluster-broker-killed',
          c,
          r,
          boundMs: bound,
          restart,
          extra: { killed: used.name },
        });
        const now = connectedPort(p.log());
        expect(now, `${p.name} moved to another cluster member`).not.toBe(port);
        expect(brokers.some((b) => b.port === now)).toBe(true);
      });
    },
  );
});

/** The port of the broker a provisioner's log says it last connected to (ours and go-choria's wording). */
function connectedPort(log: string): number | undefined {
  const all = [...log.matchAll(/[Cc]onnected to (?:Choria broker |nats:\/\/|tls:\/\/)?127\.0\.0\.1:(\d+)/g)];
  const last = all.at(-1)?.[1];
  return last === undefined ? undefined : Number(last);
}

/** ms from `since` to the log line of the standby winning, when the log has timestamps (ours: ISO; upstream: logrus time=). */
function takeover(log: string, since: number): number | undefined {
  const line = log.split('\n').find((x) => x.includes(LEADER));
  const m = line === undefined ? null : /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?)/.exec(line);
  if (m?.[1] === undefined) return undefined;
  return Date.parse(m[1].endsWith('Z') ? m[1] : `${m[1]}Z`) - since;
}

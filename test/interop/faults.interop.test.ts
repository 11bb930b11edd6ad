// Interop rows (k)-(o): the faults real fleets meet most, against real go-choria servers behind a
// real Choria Broker, this project's provisioner and (where it has the feature) the upstream one
// side by side: a leader paused (SIGSTOP) while its helpers run and continued after the standby
// took over, the same for an active/active member, the provisioner's path to the broker going
// silent without closing, 150 ms each way on that path, and a rolling restart with the node
// history shared. The servers' own state is the judge: provisioned means the server runs its new
// configuration and is connected (a server whose certificate does not match its key never gets
// there: it cannot load its TLS pair), configured once means one configuration rewrite in its log.
import { describe, expect, it } from 'vitest';
import { sleep, until } from '@choria-provisioner/test-support/wait';
import {
  interopSuite,
  labServers,
  pauseProcess,
  restartMidFlow,
  rowBound,
  rowCases,
  settleRow,
  startTcpRelay,
  waitLog,
  waitProvisioned,
  waitWaiting,
  withLab,
  issuerNetwork,
  type FleetSpec,
  type Lab,
  type LabBroker,
  type ProvisionerKind,
  type RowCase,
  type SiteSpec,
} from '@choria-provisioner/test-support/lab/index';

const { available, kinds: KINDS } = interopSuite();
// faults are injected once per row: no broker-restart variant on top
const CASES = rowCases(KINDS, ['plain']);
const OURS = rowCases(['ours'], ['plain']);
const LEADER = 'Became leader after winning election';
/** servers of the pause rows: LAB_PAUSE_SERVERS, else LAB_SERVERS when set (the short pass), else 40 */
const PAUSE_SERVERS =
  process.env['LAB_PAUSE_SERVERS'] !== undefined
    ? Number(process.env['LAB_PAUSE_SERVERS'])
    : process.env['LAB_SERVERS'] !== undefined
      ? labServers()
      : 40;

type Flow = 'pki' | 'ed25519';
const FLOWS: readonly Flow[] = ['pki', 'ed25519'];
const IDENTITY = 'provisioner.lab.example';

interface FlowSetup {
  readonly broker: LabBroker;
  readonly url: string;
  readonly fleet: Partial<FleetSpec>;
  readonly site: Omit<SiteSpec, 'site' | 'brokerUrls'>;
  readonly env: Readonly<Record<string, string>>;
}

/**
 * The broker and what the fleet and the provisioners need for `flow`: pki (the lab CA signs the
 * servers' CSRs: a new key at every gencsr) or ed25519 on an Organization Issuer network (a new
 * key at every gen25519, a server JWT minted for it).
 */
async function flowSetup(l: Lab, kind: ProvisionerKind, flow: Flow, electionTtl?: string): Promise<FlowSetup> {
  const brokerOpts = electionTtl === undefined ? {} : { electionTtl };
  if (flow === 'pki') {
    const broker = await l.broker(brokerOpts);
    return {
      broker,
      url: `nats://127.0.0.1:${broker.port}`,
      fleet: { signCsr: true },
      site: { features: { pki: true } },
      env: {},
    };
  }
  const net = await issuerNetwork(l, kind, IDENTITY, brokerOpts);
  return {
    broker: net.broker,
    url: net.url,
    fleet: net.fleet,
    site: { choriaConfig: net.site.choriaConfig, features: net.site.features, yaml: net.site.yaml },
    env: net.env,
  };
}

/**
 * Two instances of one site with one identity (one client certificate: the node lock cannot tell
 * them apart), 8 workers, a helper that takes 7 s, 40 servers waiting. The first is paused 6 s
 * after the second started and continued 16 s later (the issue's setup); the servers' state then
 * says whether any of them was left worse than it was found.
 */
async function pausedInstanceRow(
  c: RowCase,
  flow: Flow,
  coordination: Record<string, unknown>,
  row: { name: string; id: string; slug: string },
): Promise<void> {
  const n = PAUSE_SERVERS;
  await withLab(`${row.slug}-${flow}-${c.slug}`, async (l) => {
    const setup = await flowSetup(l, c.kind, flow, coordination['leader_election'] === true ? '10s' : undefined);
    const fleet = await l.fleet({
      prefix: row.slug.slice(0, 6),
      count: n,
      withConfig: true,
      provisioningUrls: [setup.url],
      ...setup.fleet,
    });
    await fleet.start();
    await waitWaiting(fleet);
    const t0 = Date.now();
    const site = {
      site: 'lab',
      brokerUrls: [setup.url],
      ...setup.site,
      yaml: { ...setup.site.yaml, workers: 8, ...coordination },
    };
    const env = { ...setup.env, LAB_HELPER_DELAY_MS: '7000' };
    const first = await l.provisioner({ kind: c.kind, name: `${c.kind}-a`, identity: IDENTITY, sites: [site], env });
    if (coordination['leader_election'] === true)
      await waitLog(`${first.name} to lead`, () => first.log(), LEADER, 90_000);
    else await sleep(1_000);
    const other = await l.provisioner({ kind: c.kind, name: `${c.kind}-b`, identity: IDENTITY, sites: [site], env });
    await sleep(6_000);
    const pausedAt = Date.now();
    await pauseProcess(first, 16_000);
    const bound = rowBound(n, 120_000);
    const r = await waitProvisioned([fleet], bound, t0);
    const extra = {
      flow,
      pausedAfterMs: pausedAt - t0,
      pausedMs: 16_000,
      otherLed: other.log().includes(LEADER),
      pausedStillRuns: !first.gone(),
    };
    await settleRow({
      name: `${row.name}, ${flow}`,
      id: `${row.id}-${flow}`,
      c,
      r,
      boundMs: bound,
      restart: restartMidFlow(c, setup.broker, [fleet], t0),
      extra,
    });
  });
}

describe.skipIf(!available)(
  'interop: pauses, silent paths, latency and rolling restarts with real go-choria servers',
  () => {
    describe.each(FLOWS)('%s flow', (flow) => {
      it.each(CASES)(
        '(k) leader paused 16 s while its helpers run: no server left with a key it cannot use, none configured twice ($label)',
        async (c) => {
          await pausedInstanceRow(
            c,
            flow,
            { leader_election: true },
            { name: '(k) paused leader', id: 'k-paused-leader', slug: 'pleader' },
          );
        },
      );

      it.each(OURS)(
        '(l) active/active member paused 16 s while its helpers run: no server left with a key it cannot use, none configured twice ($label)',
        async (c) => {
          await pausedInstanceRow(
            c,
            flow,
            { coordination: 'active_active' },
            { name: '(l) paused active/active member', id: 'l-paused-member', slug: 'pmember' },
          );
        },
      );
    });

    it.each(CASES)(
      '(m) the path to the broker goes silent without closing: the last server provisioned within 30 s ($label)',
      async (c) => {
        const n = Number(process.env['LAB_SILENT_SERVERS'] ?? '60');
        await withLab(`silent-path-${c.slug}`, async (l) => {
          const b = await l.broker();
          const url = `nats://127.0.0.1:${b.port}`;
          const relay = await startTcpRelay(url);
          try {
            const fleet = await l.fleet({ prefix: 'silent', count: n, withConfig: true, provisioningUrls: [url] });
            await fleet.start();
            await waitWaiting(fleet);
            await l.provisioner({
              kind: c.kind,
              name: c.kind,
              identity: 'provisioner.lab.example',
              sites: [{ site: 'lab', brokerUrls: [relay.url] }],
              env: { LAB_HELPER_DELAY_MS: '1000' },
            });
            await until(
              '10 servers provisioned',
              () => fleet.states().filter((x) => x.provisioned).length >= 10,
              120_000,
              { stepMs: 200 },
            );
            relay.goSilent();
            const died = Date.now();
            // waits past the 30 s limit so the result says how long it really took
            const bound = 600_000;
            const r = await waitProvisioned([fleet], bound, died);
            await settleRow({
              name: '(m) silent path',
              id: 'm-silent-path',
              c,
              r,
              boundMs: bound,
              restart: restartMidFlow(c, b, [fleet], died),
              limitMs: 30_000,
              extra: { measuredFrom: 'path went silent' },
            });
          } finally {
            await relay.close();
          }
        });
      },
    );

    it.each(CASES)(
      '(n) 150 ms each way between provisioner and broker: every server provisioned, none taken for gone ($label)',
      async (c) => {
        const n = labServers();
        await withLab(`latency-${c.slug}`, async (l) => {
          const b = await l.broker();
          const url = `nats://127.0.0.1:${b.port}`;
          const relay = await startTcpRelay(url);
          relay.setLatency(150);
          try {
            const fleet = await l.fleet({ prefix: 'slow', count: n, withConfig: true, provisioningUrls: [url] });
            await fleet.start();
            await waitWaiting(fleet);
            const t0 = Date.now();
            const p = await l.provisioner({
              kind: c.kind,
              name: c.kind,
              identity: 'provisioner.lab.example',
              sites: [{ site: 'lab', brokerUrls: [relay.url] }],
            });
            const bound = rowBound(n, 90_000);
            const r = await waitProvisioned([fleet], bound, t0);
            const gone = (p.log().match(/ is gone: /g) ?? []).length;
            await settleRow({
              name: '(n) 150 ms each way',
              id: 'n-latency',
              c,
              r,
              boundMs: bound,
              restart: restartMidFlow(c, b, [fleet], t0),
              extra: { latencyMs: 150, goneByMistake: gone },
            });
            if (c.kind === 'ours') expect(gone, 'servers taken for gone while they were only far away').toBe(0);
          } finally {
            await relay.close();
          }
        });
      },
    );

    it.each(CASES)(
      '(o) rolling restart: SIGTERM once 30 % were configured, started again at once, node history shared ($label)',
      async (c) => {
        const n = labServers();
        await withLab(`rolling-${c.slug}`, async (l) => {
          const b = await l.broker();
          const url = `nats://127.0.0.1:${b.port}`;
          const fleet = await l.fleet({ prefix: 'roll', count: n, withConfig: true, provisioningUrls: [url] });
          await fleet.start();
          await waitWaiting(fleet);
          const t0 = Date.now();
          const site = { site: 'lab', brokerUrls: [url], yaml: { workers: 8 } };
          const env = { LAB_HELPER_DELAY_MS: '500' };
          const first = await l.provisioner({
            kind: c.kind,
            name: `${c.kind}-1`,
            identity: 'provisioner.lab.example',
            sites: [site],
            env,
          });
          await until(
            '30 % configured',
            () => fleet.states().filter((x) => x.configures > 0).length >= n * 0.3,
            120_000,
            { stepMs: 100 },
          );
          await first.stop('SIGTERM');
          await l.provisioner({
            kind: c.kind,
            name: `${c.kind}-2`,
            identity: 'provisioner.lab.example',
            sites: [site],
            env,
          });
          const bound = rowBound(n, 90_000);
          const r = await waitProvisioned([fleet], bound, t0);
          await settleRow({
            name: '(o) rolling restart',
            id: 'o-rolling-restart',
            c,
            r,
            boundMs: bound,
            restart: restartMidFlow(c, b, [fleet], t0),
          });
        });
      },
    );
  },
);

// Interop rows for the helper's other answers, against real go-choria servers: defer, shutdown,
// action policies, OPA policies and upgrades (release_update from a go-updater repository). Ours
// and the upstream provisioner side by side; each row fails unless every server ends as it should.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { until } from '@choria-provisioner/test-support/wait';
import {
  UPGRADE_VERSION,
  interopSuite,
  labServers,
  provisionedIdentities,
  provisionedStates,
  restartMidFlow,
  rowBound,
  settleRow,
  waitProvisioned,
  waitWaiting,
  withLab,
  writeUpgradeRepository,
  type Lab,
  type FleetSpec,
  type LabFleet,
  type MidFlowRestart,
  type RowCase,
  type SiteSpec,
} from '@choria-provisioner/test-support/lab/index';

const { available, cases: CASES } = interopSuite();
const ACTION_POLICY = 'policy default deny\nallow\trpcutil\tping\t*\t*\n';
const OPA_POLICY = 'package io.choria.aaa.policy\n\ndefault allow = true\n';

/**
 * A broker, a fleet waiting in provisioning mode, then the provisioner (with the broker restarted
 * mid-flow in that variant): the common shape of these rows.
 */
async function provisionFleet(
  l: Lab,
  c: RowCase,
  fleet: Omit<FleetSpec, 'provisioningUrls' | 'withConfig'>,
  site: Omit<SiteSpec, 'brokerUrls'> = { site: 'lab' },
): Promise<{ fleet: LabFleet; t0: number; restart: MidFlowRestart }> {
  const b = await l.broker();
  const url = `nats://127.0.0.1:${b.port}`;
  const f = await l.fleet({ withConfig: true, provisioningUrls: [url], ...fleet });
  await f.start();
  await waitWaiting(f);
  const t0 = Date.now();
  const restart = restartMidFlow(c, b, [f], t0);
  await l.provisioner({
    kind: c.kind,
    name: c.kind,
    identity: 'provisioner.lab.example',
    sites: [{ ...site, brokerUrls: [url] }],
  });
  return { fleet: f, t0, restart };
}

function nodeLog(fleet: LabFleet, id: string): string {
  try {
    return readFileSync(join(fleet.nodeDir(id), 'server.log'), 'utf8');
  } catch {
    return '';
  }
}

describe.skipIf(!available)('interop: helper answers with real go-choria servers', () => {
  it.each(CASES)(
    'defer: the helper defers each node once, the node is provisioned on a later try ($label)',
    async (c) => {
      const n = labServers();
      await withLab(`defer-${c.slug}`, async (l) => {
        const { fleet, t0, restart } = await provisionFleet(l, c, { prefix: 'dfr', count: n, deferRuns: 1 });
        // upstream forgets a deferred node until the next discovery (interval 1m, the minimum)
        const bound = rowBound(n, 100_000);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        await settleRow({ name: 'defer', id: 'defer', c, r, boundMs: bound, restart });
        for (const s of provisionedStates(r))
          expect(s.helperRuns, `${s.identity}: helper runs`).toBeGreaterThanOrEqual(2);
      });
    },
  );

  it.each(CASES)(
    'shutdown: the helper says shutdown, every node is shut down and never configured ($label)',
    async (c) => {
      const n = labServers();
      await withLab(`shutdown-${c.slug}`, async (l) => {
        const { fleet, t0, restart } = await provisionFleet(l, c, {
          prefix: 'shut',
          count: n,
          reply: { shutdown: true, msg: 'lab: not wanted here' },
        });
        const bound = rowBound(n);
        const shut = (): string[] =>
          fleet.identities.filter((id) => /choria_provision#shutdown/.test(nodeLog(fleet, id)));
        await until(
          'every node to be sent choria_provision#shutdown',
          () => shut().length === n,
          bound + restart.extraWaitMs,
          { stepMs: 200 },
        ).catch(() => undefined);
        const ms = Date.now() - t0;
        const states = fleet.states();
        const done = new Set(shut());
        const r = { ms, states, configuredTwice: [], pending: fleet.identities.filter((id) => !done.has(id)) };
        await settleRow({ name: 'shutdown', id: 'shutdown', c, r, boundMs: bound, restart, outcome: 'shut down' });
        for (const s of states.filter((x) => done.has(x.identity))) {
          expect(s.configures, `${s.identity}: configured although the helper said shutdown`).toBe(0);
          expect(nodeLog(fleet, s.identity), `${s.identity}: shut down`).toMatch(/[Ss]hutting down|shutdown/);
        }
      });
    },
  );

  it.each(CASES)('action policies: written to policies/ beside the configuration ($label)', async (c) => {
    const n = labServers();
    await withLab(`action-policies-${c.slug}`, async (l) => {
      const { fleet, t0, restart } = await provisionFleet(l, c, {
        prefix: 'apol',
        count: n,
        reply: { action_policies: { 'rpcutil.policy': ACTION_POLICY } },
      });
      const bound = rowBound(n);
      const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
      await settleRow({ name: 'action policies', id: 'action-policies', c, r, boundMs: bound, restart });
      for (const id of provisionedIdentities(r))
        expect(readFileSync(join(fleet.nodeDir(id), 'policies', 'rpcutil.policy'), 'utf8'), id).toBe(ACTION_POLICY);
    });
  });

  it.each(CASES)('OPA policies: written to policies/rego/ beside the configuration ($label)', async (c) => {
    const n = labServers();
    await withLab(`opa-policies-${c.slug}`, async (l) => {
      const { fleet, t0, restart } = await provisionFleet(l, c, {
        prefix: 'opa',
        count: n,
        reply: { opa_policies: { 'default.rego': OPA_POLICY } },
      });
      const bound = rowBound(n);
      const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
      await settleRow({ name: 'OPA policies', id: 'opa-policies', c, r, boundMs: bound, restart });
      for (const id of provisionedIdentities(r))
        expect(readFileSync(join(fleet.nodeDir(id), 'policies', 'rego', 'default.rego'), 'utf8'), id).toBe(OPA_POLICY);
    });
  });

  it.each(CASES)(
    `upgrades: servers on 0.30.2 are moved to ${UPGRADE_VERSION} from a go-updater repository, then provisioned ($label)`,
    async (c) => {
      const n = labServers();
      await withLab(`upgrades-${c.slug}`, async (l) => {
        const root = join(l.dir, 'repository');
        await writeUpgradeRepository({
          root,
          version: UPGRADE_VERSION,
          binary: l.paths.upgradeChoria,
          cacheDir: l.paths.cacheDir,
        });
        const repo = await l.httpServer(root);
        const { fleet, t0, restart } = await provisionFleet(
          l,
          c,
          { prefix: 'upg', count: n, jwt: { allowUpdate: true }, reply: { upgrade: UPGRADE_VERSION } },
          { site: 'lab', features: { upgrades: true }, yaml: { upgrades_repository: repo } },
        );
        // every server downloads and unpacks a 100 MB binary on two shared cores
        const bound = rowBound(n, 180_000);
        const r = await waitProvisioned([fleet], bound + restart.extraWaitMs, t0);
        await settleRow({ name: 'upgrades', id: 'upgrades', c, r, boundMs: bound, restart });
        for (const s of provisionedStates(r)) {
          expect(s.version, `${s.identity}: the version it runs`).toBe(UPGRADE_VERSION);
          expect(existsSync(join(fleet.nodeDir(s.identity), 'server.conf'))).toBe(true);
        }
      });
    },
  );
});

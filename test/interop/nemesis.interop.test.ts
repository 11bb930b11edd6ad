// A seeded random nemesis against real go-choria servers (this project's provisioner only): three
// instances of one site, each under a restart loop as systemd runs it, provision a fleet whose
// certificates last a few minutes and renew them before they expire, while a plan of faults drawn
// from a seed pauses an instance (4-20 s), kills one, restarts the broker, or silences the
// instances' open connections (5-30 s), one every 3-10 s. The servers are the judge: every one
// configured once per generation, its certificate matching its key, none expired, every one
// renewed before its first certificate expired, and connected at the end; never more than
// `renewal_concurrency` back in provisioning mode at once after the first provisioning.
//
// LAB_NEMESIS_SEEDS (default 11: the row's seed; `npm run nemesis` runs more), LAB_NEMESIS_MODES
// (aa, aa-shared, leader; default all three), LAB_NEMESIS_SERVERS (default 40).
import { describe, expect, it } from 'vitest';
import { sleep } from '@choria-provisioner/test-support/wait';
import {
  interopSuite,
  appendResult,
  labServers,
  provisionedIdentities,
  recordResult,
  waitProvisioned,
  type ProvisionedReport,
  startTcpRelay,
  waitWaiting,
  withLab,
  type Lab,
  type LabFleet,
} from '@choria-provisioner/test-support/lab/index';
import { wholeNumberSetting } from '@choria-provisioner/test-support/lab/env';
import {
  RENEWER,
  connectedSince,
  inProvisioning,
  readText,
  renewerConfig,
  serverCert,
  type Cert,
} from '@choria-provisioner/test-support/lab/judge';
import { Supervised, describeStep, nemesisPlan, runNemesis } from '@choria-provisioner/test-support/lab/nemesis';
import { join } from 'node:path';

const { available, kinds } = interopSuite();
const VALIDITY_MS = 4 * 60_000;
const CONCURRENCY = 5;
const INSTANCES = 3;
type Mode = 'aa' | 'aa-shared' | 'leader';
const MODES: readonly Mode[] = ['aa', 'aa-shared', 'leader'];

const seeds = (): number[] =>
  (process.env['LAB_NEMESIS_SEEDS'] ?? '11')
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isSafeInteger(n));
const modes = (): Mode[] => {
  const asked = (process.env['LAB_NEMESIS_MODES'] ?? MODES.join(',')).split(',').map((m) => m.trim());
  return MODES.filter((m) => asked.includes(m));
};

/** Every server at one moment: what it holds and whether it is connected with its configuration. */
interface Snapshot {
  readonly at: number;
  readonly servers: readonly { id: string; cert: Cert | undefined; connected: boolean }[];
}

/** What the servers say after the nemesis. */
interface Verdict {
  readonly renewed: number;
  readonly notRenewedInTime: string[];
  readonly expired: string[];
  readonly keyMismatch: string[];
  readonly configuredTwice: string[];
  readonly notConnected: string[];
  readonly mostInProvisioning: number;
}

/** Configures by the provisioner beyond one per generation (a generation begins with each reprovision). */
function configuredBeyondGenerations(fleet: LabFleet, id: string): boolean {
  const lines = readText(join(fleet.nodeDir(id), 'server.log'))
    .split('\n')
    .filter((l) => l.includes('Rewriting configuration file'));
  const reprovisions = lines.filter((l) => l.includes(RENEWER)).length;
  return lines.length - reprovisions > 1 + reprovisions;
}

/** Watches the fleet until each server holds a certificate later than its first one, or the first ones expired. */
async function watch(
  fleet: LabFleet,
  stopAt: () => number,
): Promise<{ renewedAt: Map<string, number>; first: Map<string, number>; most: number }> {
  const first = new Map<string, number>();
  const renewedAt = new Map<string, number>();
  let most = 0;
  const ids = fleet.identities;
  while (renewedAt.size < ids.length && Date.now() < stopAt()) {
    let out = 0;
    for (const id of ids) {
      const cert = serverCert(fleet, id);
      if (cert !== undefined && !first.has(id)) first.set(id, cert.notAfter);
      if (cert !== undefined && cert.notAfter > (first.get(id) ?? Infinity) && !renewedAt.has(id))
        renewedAt.set(id, Date.now());
      if (inProvisioning(fleet, id)) out++;
    }
    // after every server was provisioned once, only renewals put servers back into provisioning
    if (first.size === ids.length) most = Math.max(most, out);
    await sleep(500);
  }
  return { renewedAt, first, most };
}

async function nemesisRow(l: Lab, mode: Mode, seed: number, count: number): Promise<Verdict> {
  const b = await l.broker({ electionTtl: '10s' });
  const url = `nats://127.0.0.1:${b.port}`;
  const relay = await startTcpRelay(url);
  try {
    const fleet = await l.fleet({
      prefix: `nem${seed}`,
      count,
      withConfig: false,
      provisioningUrls: [url],
      jwt: { provisionByDefault: true },
      signCsr: true,
      certValidityMs: VALIDITY_MS,
      configuration: { rpcauthorization: '0' },
    });
    const yaml = {
      workers: 8,
      // a failing seed is read from these logs afterwards: why a node was not added, not sent, not renewed
      loglevel: 'debug',
      renewal_window: 60,
      renewal_margin: '30s',
      renewal_concurrency: CONCURRENCY,
      renewal_return_timeout: '90s',
      renewal_choria_config: await renewerConfig(l, relay.url),
      ...(mode === 'leader' ? { leader_election: true } : { coordination: 'active_active' }),
    };
    const site = { site: 'nem', brokerUrls: [relay.url], features: { pki: true }, yaml };
    await fleet.start();
    await waitWaiting(fleet);
    const instances = Array.from(
      { length: INSTANCES },
      (_, i) =>
        new Supervised((serial) =>
          l.provisioner({
            kind: 'ours',
            name: `nem-${i + 1}-${serial}`,
            identity: mode === 'aa' ? `provisioner-${i + 1}.lab.example` : 'provisioner.lab.example',
            sites: [site],
          }),
        ),
    );
    // started within a second, as replicas of a deployment are
    await Promise.all(instances.map((s) => s.begin()));
    const plan = nemesisPlan(seed, { instances: INSTANCES, durationMs: VALIDITY_MS + 60_000 });
    console.log(`nemesis seed ${seed} (${mode}): ${plan.length} faults\n  ${plan.map(describeStep).join('\n  ')}`);
    let done = false;
    const nemesis = runNemesis(
      plan,
      { instances, broker: b, relay },
      () => done,
      () => undefined,
    );
    let lastExpiry = Date.now() + VALIDITY_MS + 120_000;
    const seen = await watch(fleet, () => lastExpiry);
    lastExpiry = Math.max(...seen.first.values(), 0);
    done = true;
    await nemesis;
    // the last faults over: every server back on the broker with its configuration. Renewals go on
    // meanwhile, so the verdict is one snapshot of every server, the first with none between its
    // reprovision and its restart into the new configuration (or the last, after 90 s)
    const snapshot = (): Snapshot => {
      const at = Date.now();
      return {
        at,
        servers: fleet.identities.map((id) => ({
          id,
          cert: serverCert(fleet, id),
          connected: connectedSince(fleet, id, 0) && !inProvisioning(fleet, id),
        })),
      };
    };
    const fine = (s: Snapshot): boolean =>
      s.servers.every((x) => x.connected && x.cert !== undefined && x.cert.matchesKey && x.cert.notAfter > s.at);
    const settle = Date.now() + 90_000;
    let last = snapshot();
    while (!fine(last) && Date.now() < settle) {
      await sleep(1_000);
      last = snapshot();
    }
    const ids = fleet.identities;
    const verdict: Verdict = {
      renewed: seen.renewedAt.size,
      notRenewedInTime: ids.filter((id) => (seen.renewedAt.get(id) ?? Infinity) >= (seen.first.get(id) ?? 0)),
      expired: last.servers.filter((x) => (x.cert?.notAfter ?? 0) <= last.at).map((x) => x.id),
      keyMismatch: last.servers.filter((x) => x.cert?.matchesKey !== true).map((x) => x.id),
      configuredTwice: ids.filter((id) => configuredBeyondGenerations(fleet, id)),
      notConnected: last.servers.filter((x) => !x.connected).map((x) => x.id),
      mostInProvisioning: seen.most,
    };
    for (const s of instances) await s.stop();
    return verdict;
  } finally {
    await relay.close();
  }
}

/**
 * Three instances sharing one identity and certificate, started within a second with every server
 * waiting: no fault but the start itself, when each instance forms its group alone for a moment.
 */
async function sharedIdentityStart(
  l: Lab,
  run: number,
  count: number,
): Promise<{ r: ProvisionedReport; fleet: LabFleet }> {
  const b = await l.broker();
  const url = `nats://127.0.0.1:${b.port}`;
  const fleet = await l.fleet({
    prefix: `sid${run}`,
    count,
    withConfig: true,
    provisioningUrls: [url],
    signCsr: true,
  });
  await fleet.start();
  await waitWaiting(fleet);
  const site = { site: 'sid', brokerUrls: [url], features: { pki: true }, yaml: { coordination: 'active_active' } };
  const started = Date.now();
  await Promise.all(
    [1, 2, 3].map((i) =>
      l.provisioner({ kind: 'ours', name: `sid-${i}`, identity: 'provisioner.lab.example', sites: [site] }),
    ),
  );
  return { r: await waitProvisioned([fleet], 120_000, started), fleet };
}

describe.skipIf(!available || !kinds.includes('ours'))(
  'interop: a seeded random nemesis through provisioning and renewal (real go-choria servers)',
  () => {
    // LAB_START_RUNS (default 1): how often the start of three instances with one identity is tried
    const runs = Array.from({ length: wholeNumberSetting('LAB_START_RUNS', 1, 20) }, (_, i) => i + 1);
    it.each(runs)(
      '(s) three instances with one identity started within a second configure no server twice (run %i)',
      async (run) => {
        const count = labServers();
        await withLab(`s-shared-start-${run}`, async (l) => {
          const { r, fleet } = await sharedIdentityStart(l, run, count);
          recordResult('s-shared-start', 'ours', r, { run });
          expect(r.pending, 'servers not provisioned').toEqual([]);
          expect(r.configuredTwice, 'servers configured twice').toEqual([]);
          const mismatched = provisionedIdentities(r).filter((id) => serverCert(fleet, id)?.matchesKey === false);
          expect(mismatched, 'servers whose certificate does not match their key').toEqual([]);
        });
      },
      240_000,
    );

    const cases = seeds().flatMap((seed) => modes().map((mode) => [mode, seed] as const));
    it.each(cases)(
      '(x) nemesis %s, seed %i: configured once per generation, keys match, none expired, all connected',
      async (mode, seed) => {
        const count = wholeNumberSetting('LAB_NEMESIS_SERVERS', 40, 60);
        await withLab(`x-nemesis-${mode}-${seed}`, async (l) => {
          const v = await nemesisRow(l, mode, seed, count);
          console.log(
            `interop x-nemesis ${mode} seed ${seed}: ${v.renewed}/${count} renewed, expired ${v.expired.length}, ` +
              `key mismatch ${v.keyMismatch.length}, configured twice ${v.configuredTwice.length}, ` +
              `not connected ${v.notConnected.length}, at most ${v.mostInProvisioning} in provisioning at once`,
          );
          appendResult({ row: `x-nemesis-${mode}`, kind: 'ours', seed, servers: count, ...v });
          expect(v.expired, 'servers whose certificate expired').toEqual([]);
          expect(v.notRenewedInTime, 'servers not renewed before their first certificate expired').toEqual([]);
          expect(v.keyMismatch, 'servers whose certificate does not match their key').toEqual([]);
          expect(v.configuredTwice, 'servers configured twice in one generation').toEqual([]);
          expect(v.notConnected, 'servers not connected with their configuration at the end').toEqual([]);
          expect(v.mostInProvisioning, 'servers back in provisioning mode at once').toBeLessThanOrEqual(CONCURRENCY);
        });
      },
      VALIDITY_MS + 8 * 60_000,
    );
  },
);

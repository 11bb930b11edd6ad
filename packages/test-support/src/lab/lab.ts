// One interop lab run: a run directory with its CA, brokers, fleets of real go-choria servers and
// provisioners, all stopped by cleanup(); plus the row checks (every node provisioned within a
// bound, none configured twice). Interop test files use only this module and index.ts.
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sleep } from '../wait.js';
import { freePort } from '../nats-server.js';
import { createBroker, type BrokerOptions, type LabBroker } from './broker.js';
import { wholeNumberSetting } from './env.js';
import { writeProvisioningJwt, type ProvisioningJwtOptions } from './jwt.js';
import { compiledJwtFile, labPaths, type LabPaths } from './paths.js';
import { createLabPki, type LabPki } from './pki.js';
import { startLabProcess, stopAllLabProcesses } from './processes.js';
import { startProvisioner, type LabProvisioner, type ProvisionerSpec } from './provisioners.js';
import { createFleet, type FleetOptions, type LabFleet, type ServerState } from './servers.js';

export interface FleetSpec {
  readonly prefix: string;
  readonly count: number;
  readonly withConfig: boolean;
  /** brokers the servers provision through (the JWT's urls) */
  readonly provisioningUrls: readonly string[];
  /** brokers the provisioned servers use (default: provisioningUrls) */
  readonly brokerUrls?: readonly string[];
  readonly jwt?: Omit<ProvisioningJwtOptions, 'file' | 'signingKey' | 'urls'> & { readonly signingKey?: string };
  readonly signCsr?: boolean;
  readonly reply?: FleetOptions['afterProvisioning']['reply'];
  readonly configuration?: FleetOptions['afterProvisioning']['configuration'];
  readonly deferRuns?: number;
  readonly protocolV2?: boolean;
  readonly certValidityMs?: number;
}

export interface Lab {
  readonly paths: LabPaths;
  readonly dir: string;
  readonly pki: LabPki;
  readonly nodesDir: string;
  broker(opts?: Partial<Omit<BrokerOptions, 'choria' | 'pki' | 'dir'>>): Promise<LabBroker>;
  /**
   * `count` brokers clustered with each other, Streams replicated `count` times, all started,
   * resolved once the cluster has made its leader election bucket
   */
  cluster(count?: number): Promise<LabBroker[]>;
  fleet(spec: FleetSpec): Promise<LabFleet>;
  provisioner(spec: Omit<ProvisionerSpec, 'dir' | 'pki' | 'nodesDir' | 'upstreamBinary'>): Promise<LabProvisioner>;
  /** a file server for upgrade repositories: python3 -m http.server on loopback */
  httpServer(root: string): Promise<string>;
  /** stops everything; removes the run directory unless `keep` (or LAB_KEEP=1) */
  cleanup(keep?: boolean): Promise<void>;
}

const KEEP_RUNS = 4;

function pruneRuns(runDir: string): void {
  let runs: string[];
  try {
    runs = readdirSync(runDir).filter((d) => d.startsWith('run-'));
  } catch {
    return;
  }
  runs
    .map((d) => ({ d, t: statSync(join(runDir, d)).mtimeMs }))
    .sort((a, b) => b.t - a.t)
    .slice(KEEP_RUNS)
    .forEach(({ d }) => rmSync(join(runDir, d), { recursive: true, force: true }));
}

export async function openLab(name: string, paths: LabPaths = labPaths()): Promise<Lab> {
  mkdirSync(paths.runDir, { recursive: true });
  pruneRuns(paths.runDir);
  const dir = join(paths.runDir, `run-${name}-${new Date().toISOString().replace(/[:.]/g, '')}-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const compiledJwt = compiledJwtFile(paths);
  const pki = await createLabPki(join(dir, 'pki'));
  const nodesDir = join(dir, 'nodes');
  const brokers: LabBroker[] = [];
  const fleets: LabFleet[] = [];
  const provisioners: LabProvisioner[] = [];
  let seq = 0;
  return {
    paths,
    dir,
    pki,
    nodesDir,
    async broker(opts = {}) {
      const b = await createBroker({
        ...opts,
        choria: paths.choria,
        pki,
        dir: join(dir, opts.name ?? `broker-${++seq}`),
      });
      brokers.push(b);
      await b.start();
      return b;
    },
    async cluster(count = 3) {
      const ports: { client: number; peer: number }[] = [];
      for (let i = 0; i < count; i++) ports.push({ client: await freePort(), peer: await freePort() });
      const members = await Promise.all(
        ports.map((p, i) =>
          createBroker({
            name: `cluster-${i + 1}`,
            choria: paths.choria,
            pki,
            dir: join(dir, `cluster-${i + 1}`),
            clientPort: p.client,
            peerPort: p.peer,
            peers: ports.filter((_, j) => j !== i).map((q) => q.peer),
            replicas: count,
          }),
        ),
      );
      brokers.push(...members);
      await Promise.all(members.map((b) => b.start()));
      await clusterStreamsReady(members);
      return members;
    },
    async fleet(spec) {
      const jwtFile = join(dir, `${spec.prefix}-provisioning.jwt`);
      await writeProvisioningJwt(paths.choria, {
        ...spec.jwt,
        file: jwtFile,
        signingKey: spec.jwt?.signingKey ?? pki.signer.keyFile,
        urls: spec.provisioningUrls,
      });
      const f = await createFleet({
        choria: paths.choria,
        compiledJwt,
        jwtFile,
        pki,
        nodesDir,
        prefix: spec.prefix,
        count: spec.count,
        withConfig: spec.withConfig,
        afterProvisioning: {
          brokerUrls: spec.brokerUrls ?? spec.provisioningUrls,
          signCsr: spec.signCsr,
          reply: spec.reply,
          configuration: spec.configuration,
          deferRuns: spec.deferRuns,
          protocolV2: spec.protocolV2 ?? spec.jwt?.protocolV2,
          certValidityMs: spec.certValidityMs,
        },
      });
      fleets.push(f);
      return f;
    },
    async provisioner(spec) {
      const p = await startProvisioner({
        ...spec,
        dir: join(dir, 'provisioners'),
        pki,
        nodesDir,
        upstreamBinary: paths.upstreamProvisioner,
      });
      provisioners.push(p);
      return p;
    },
    async httpServer(root) {
      const port = await freePort();
      startLabProcess(
        `http ${root}`,
        'python3',
        ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', root],
        { logFile: join(dir, 'http.log') },
      );
      for (let i = 0; i < 100; i++) {
        const ok = await fetch(`http://127.0.0.1:${port}/`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) return `http://127.0.0.1:${port}`;
        await sleep(100);
      }
      throw new Error(`the upgrade repository's HTTP server on 127.0.0.1:${port} did not answer within 10 s`);
    },
    async cleanup(keep = false) {
      await Promise.all(provisioners.map((p) => p.stop()));
      await Promise.all(fleets.map((f) => f.stop()));
      await Promise.all(brokers.map((b) => b.stop()));
      await stopAllLabProcesses();
      if (!keep && process.env['LAB_KEEP'] !== '1') rmSync(dir, { recursive: true, force: true });
    },
  };
}

const STREAMS_READY = 'Created stream KV_CHORIA_LEADER_ELECTION';
const STREAMS_FAILED = 'could not setup system streams';

/**
 * Waits for the cluster's election bucket. A go-choria broker gives its stream set-up a few
 * seconds and does not try again; on a loaded machine a cluster can miss that (`could not setup
 * system streams: ... context deadline exceeded`, or `no suitable peers for placement` while a
 * member is still joining) and then never makes the rest. Then the whole cluster is restarted
 * together, as an operator would, and makes them on its next start (three starts at most).
 */
async function clusterStreamsReady(members: readonly LabBroker[], timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let start = 1; ; start++) {
    const offsets = members.map((b) => b.log().length);
    const since = (b: LabBroker, i: number): string => b.log().slice(offsets[i]);
    let failedAt: number | undefined;
    for (;;) {
      if (members.some((b, i) => since(b, i).includes(STREAMS_READY))) return;
      if (Date.now() > deadline) {
        throw new Error(
          `the cluster made no election bucket within ${timeoutMs / 1000} s, ${start} start(s) ` +
            `(no "${STREAMS_READY}" in ${members.map((b) => b.logFile).join(', ')})`,
        );
      }
      if (failedAt === undefined && members.some((b, i) => since(b, i).includes(STREAMS_FAILED))) failedAt = Date.now();
      // another member may still make them: give the cluster a few seconds after a failure
      if (failedAt !== undefined && Date.now() - failedAt > 8_000 && start < 3) break;
      await sleep(250);
    }
    await Promise.all(members.map((b) => b.stop()));
    await Promise.all(members.map((b) => b.start()));
  }
}

/** LAB_SERVERS (default 20): servers per row. */
export function labServers(max = 50): number {
  return wholeNumberSetting('LAB_SERVERS', 20, max);
}

/** LAB_JWT_SERVERS: servers of the jwt row; default 200, or LAB_SERVERS when only that is set. */
export function labJwtServers(): number {
  if (process.env['LAB_JWT_SERVERS'] === undefined && process.env['LAB_SERVERS'] !== undefined) return labServers(200);
  return wholeNumberSetting('LAB_JWT_SERVERS', 200, 200);
}

export interface ProvisionedReport {
  readonly ms: number;
  readonly states: ServerState[];
  /** identities whose configuration was rewritten more than once */
  readonly configuredTwice: string[];
  readonly pending: string[];
}

/**
 * Waits until every server of the fleets is provisioned (or the bound passes) and reports. Sticky:
 * a server seen provisioned stays counted while it reconnects (say, to a restarted broker), since
 * it already runs with its new configuration.
 */
export async function waitProvisioned(
  fleets: readonly LabFleet[],
  boundMs: number,
  since = Date.now(),
): Promise<ProvisionedReport> {
  const seen = new Set<string>();
  for (;;) {
    const s = fleets.flatMap((f) => f.states());
    for (const x of s) if (x.provisioned) seen.add(x.identity);
    const pending = s.filter((x) => !seen.has(x.identity)).map((x) => x.identity);
    if (pending.length === 0 || Date.now() - since > boundMs) {
      return {
        ms: Date.now() - since,
        states: s,
        configuredTwice: s.filter((x) => x.configures > 1).map((x) => x.identity),
        pending,
      };
    }
    await sleep(250);
  }
}

/**
 * The identities a row's per-server checks look at: every server for this project's provisioner
 * (whose rows fail unless all were provisioned), the ones it got to for upstream (measured, not
 * held to ours' checks; see settleRow).
 */
export function provisionedStates(r: ProvisionedReport): ServerState[] {
  const pending = new Set(r.pending);
  return r.states.filter((s) => !pending.has(s.identity));
}

/** The identities of provisionedStates(r). */
export function provisionedIdentities(r: ProvisionedReport): string[] {
  return provisionedStates(r).map((s) => s.identity);
}

/** One line a row prints: `interop <row> <kind>: <n>/<total> servers <outcome> in <s> s, configured twice: <n>`. */
export function reportLine(row: string, kind: string, r: ProvisionedReport, outcome = 'provisioned'): string {
  return (
    `interop ${row} ${kind}: ${r.states.length - r.pending.length}/${r.states.length} servers ${outcome} in ` +
    `${(r.ms / 1000).toFixed(1)} s, configured twice: ${r.configuredTwice.length}`
  );
}

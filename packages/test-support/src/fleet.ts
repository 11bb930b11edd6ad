// Simulated fleets in tests: a per-file harness that starts brokers, simulated fleets and
// provisioners and stops them after each test, the "provisioned once" rules, waiting loops that
// drive discovery, and metric reads.
import { createPrivateKey, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { Registry } from 'prom-client';
import { SimulatedFleet, type FleetOptions, type NodeReport } from '@choria-provisioner/simulator';
import {
  Provisioner,
  createHostRunner,
  ksuid,
  type ChoriaSettings,
  type HelperFunction,
  type HelperRequest,
  type HostRunner,
  type HostRunnerContext,
  type LostReplyTimings,
  type ProvisionerOptions,
} from '@choria-provisioner/core/internal';
import {
  addElectionBucket,
  CHORIA_BROKER_LOGINS,
  startNatsServer,
  type NatsServerOptions,
  type RunningNatsServer,
} from './nats-server.js';
import { testConfig, testSettings } from './settings.js';
import { until } from './wait.js';

/** The configuration every in-process test helper returns: enough for a node to leave provisioning. */
export function plainConfiguration(req: HelperRequest): Record<string, string> {
  return {
    identity: req.identity,
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': 'nats://broker.example.net:4222',
  };
}

export const configureHelper: HelperFunction = (req) => ({ configuration: plainConfiguration(req) });

export interface ProvisionerSpec extends Partial<ProvisionerOptions> {
  /** the provisioner's Choria identity (default provisioner.example.net) */
  identity?: string;
  /** extra Choria client configuration lines (later keys win) */
  choriaConfig?: string;
  /** replaces the Choria settings built from the two above */
  settings?: ChoriaSettings;
  /**
   * Per-try RPC timeout. The Provisioner has no such setting (every try waits the client's
   * discovery timeout + DDL timeout: 22 s for choria_provision); this builds the stock Host
   * pipeline with the shorter timeout through the `makeHostRunner` option.
   */
  rpcTimeoutMs?: number;
  /** how lost replies are investigated (built the same way as rpcTimeoutMs) */
  lostReply?: LostReplyTimings;
}

/** One per test file: everything it starts is stopped by cleanup(), last started first. */
export class FleetHarness {
  readonly #cleanups: (() => Promise<void>)[] = [];
  /** brokers with the Choria Broker's accounts: their fleets and provisioners log in to the provisioning account */
  readonly #choriaLayout = new Set<string>();

  onCleanup(fn: () => Promise<void>): void {
    this.#cleanups.push(fn);
  }

  async cleanup(): Promise<void> {
    for (const c of this.#cleanups.splice(0).reverse()) await c().catch(() => undefined);
  }

  /** A fresh temp directory, removed at cleanup. */
  tempDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'cpts-e2e-'));
    this.onCleanup(async () => rmSync(dir, { recursive: true, force: true }));
    return dir;
  }

  /**
   * A broker with the Choria Broker's account layout unless `choriaAccounts: false`: the fleet and
   * the provisioner log in to the provisioning account (no JetStream there), unauthenticated
   * clients land in the choria account, as on a real Choria Broker.
   */
  async broker(opts: NatsServerOptions = {}): Promise<RunningNatsServer> {
    const s = await startNatsServer({ jetstream: false, choriaAccounts: true, ...opts });
    if (s.choriaAccounts) this.#choriaLayout.add(s.url);
    this.onCleanup(() => s.stop());
    return s;
  }

  /** A fleet with the suite's defaults: token s3cret, delays 100x faster, no control subjects, no events. */
  async fleet(url: string, opts: Partial<FleetOptions>): Promise<SimulatedFleet> {
    const f = await SimulatedFleet.start({
      servers: [url],
      ...(this.#choriaLayout.has(url)
        ? { user: CHORIA_BROKER_LOGINS.node.user, password: CHORIA_BROKER_LOGINS.node.password }
        : {}),
      count: 20,
      token: 's3cret',
      timeScale: 0.01,
      rsaBits: 1024,
      control: false,
      eventFormat: 'none',
      ...opts,
    });
    this.onCleanup(() => f.stop());
    return f;
  }

  /** A provisioner for `url` from provisioner YAML (see testConfig for the defaults), not yet started. */
  provisioner(url: string, yaml: string, spec: ProvisionerSpec = {}): Provisioner {
    const { identity, choriaConfig, settings, rpcTimeoutMs, lostReply, ...opts } = spec;
    // on a Choria Broker layout the provisioner logs in as upstream's does: user `provisioner`
    const login =
      this.#choriaLayout.has(url) && !/^broker_provisioning_password:/m.test(yaml)
        ? `broker_provisioning_password: ${CHORIA_BROKER_LOGINS.provisioner.password}\n`
        : '';
    const config = testConfig(`${login}${yaml}`);
    const choria = settings ?? testSettings(url, config, identity ?? 'provisioner.example.net', choriaConfig ?? '');
    const shortTimeouts = (ctx: HostRunnerContext): HostRunner =>
      createHostRunner({
        ...ctx,
        config,
        ...(rpcTimeoutMs !== undefined ? { rpcTimeoutMs } : {}),
        ...(lostReply !== undefined ? { lostReply } : {}),
      });
    const p = new Provisioner({
      config,
      choria,
      helper: configureHelper,
      ...opts,
      ...(rpcTimeoutMs !== undefined || lostReply !== undefined ? { makeHostRunner: shortTimeouts } : {}),
    });
    this.onCleanup(() => p.stop());
    return p;
  }

  /** A JetStream broker with the leader election bucket the Choria broker would create (5 s TTL). */
  async electionBroker(): Promise<RunningNatsServer> {
    const s = await this.broker({ jetstream: true });
    await addElectionBucket(s.url);
    return s;
  }
}

export interface NodeSelection {
  /** nodes the rule does not apply to (shut down or vanished on purpose) */
  except?: (n: NodeReport) => boolean;
}

function selected(fleet: SimulatedFleet, sel: NodeSelection): NodeReport[] {
  return fleet.report().nodes.filter((n) => !(sel.except?.(n) ?? false));
}

/** Zero violations and every node configured once and restarted once. */
export function expectExactlyOnce(fleet: SimulatedFleet, sel: NodeSelection = {}): void {
  const r = fleet.report();
  expect(r.totals.violations, JSON.stringify(r.totals.violationsByKind)).toBe(0);
  const wrong = selected(fleet, sel)
    .filter((n) => n.configuredCount !== 1 || n.restartCount !== 1)
    .map((n) => `${n.identity}:${n.configuredCount}/${n.restartCount}`);
  expect(wrong).toEqual([]);
}

/**
 * The rule of provisioner.test.ts: after a crash or a lost reply a node may have received
 * `configure` without its `restart`, and the next try rightly configures it again. Provisioning a
 * node twice (a second restart, a configure after the restart: the simulator's
 * `configured-twice`) must never happen, and every node ends provisioned.
 */
export function expectProvisionedOnce(fleet: SimulatedFleet, sel: NodeSelection = {}): void {
  const r = fleet.report();
  // A restart refused because the node is not configured is the provisioner's deliberate check
  // after a configure reply lost with the broker (docs/protocol.md, "Lost replies"); it happens
  // only where the broker went away, as in these tests. Every other kind is a mistake.
  const { 'restart-refused': _checks, ...mistakes } = r.totals.violationsByKind;
  // the failure names the first few violations, node by node
  const details = r.nodes
    .flatMap((n) =>
      n.violations
        .filter((v) => v.kind !== 'restart-refused')
        .map((v) => `${n.identity} ${v.at} ${v.kind}: ${v.detail}`),
    )
    .slice(0, 8);
  expect(
    Object.values(mistakes).reduce((a, n) => a + n, 0),
    `${JSON.stringify(r.totals.violationsByKind)}\n${details.join('\n')}`,
  ).toBe(0);
  const wrong = selected(fleet, sel)
    .filter((n) => n.restartCount !== 1 || n.configuredCount < 1 || n.state !== 'provisioned')
    .map((n) => `${n.identity}:${n.state}:${n.configuredCount}/${n.restartCount}`);
  expect(wrong).toEqual([]);
}

/**
 * Runs a discovery whenever the provisioner has nothing queued or in flight: the interval is at
 * least a minute, so nodes that missed a discovery, failed or were deferred need the test to look again.
 */
export async function discoverWhenIdle(p: Provisioner): Promise<void> {
  const s = p.status({ limit: 0 });
  if (!s.paused && s.queue === 0 && s.busyWorkers === 0) await p.discover();
}

/** Waits until `count` nodes are provisioned (default: all), discovering whenever the provisioner is idle. */
export async function driveUntilProvisioned(
  p: Provisioner,
  fleet: SimulatedFleet,
  timeoutMs: number,
  count = fleet.identities().length,
): Promise<void> {
  await until(
    `${count} nodes provisioned (now ${fleet.countByState().provisioned})`,
    () => fleet.countByState().provisioned >= count,
    timeoutMs,
    {
      tick: () => discoverWhenIdle(p),
      stepMs: 100,
    },
  );
}

/**
 * The value of one metric series (0 when absent),
 * e.g. metricValue(r, 'choria_provisioner_outcomes', {outcome: 'failed'}).
 */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  // summaries and histograms list their _sum/_count series under the base metric
  const metrics = await registry.getMetricsAsJSON();
  const metric = metrics.find((m) => m.name === name) ?? metrics.find((m) => name.startsWith(`${m.name}_`));
  const values: { value: number; labels: Record<string, unknown>; metricName?: string }[] = metric?.values ?? [];
  const series = values.find(
    (v) =>
      (v.metricName ?? metric?.name) === name &&
      Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want),
  );
  return series?.value ?? 0;
}

/** Live child processes of this process whose command line contains `needle` (reads Linux /proc). */
export function childProcesses(needle: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // fields after "(comm)": state, ppid, ...
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(needle))
        found.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return found;
}

// --- ed25519 (Organization Issuer) material -------------------------------------------------

const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export function ed25519FromSeedHex(seedHex: string): KeyObject {
  return createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, Buffer.from(seedHex.trim(), 'hex')]),
    format: 'der',
    type: 'pkcs8',
  });
}

const b64u = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

/** An EdDSA JWT over `claims`, signed with the key of `seedHex`. */
export function signEdDsaJwt(claims: Record<string, unknown>, seedHex: string): string {
  const head = `${b64u(JSON.stringify({ alg: 'EdDSA', typ: 'JWT' }))}.${b64u(JSON.stringify(claims))}`;
  return `${head}.${b64u(sign(null, Buffer.from(head), ed25519FromSeedHex(seedHex)))}`;
}

/**
 * The provisioner's chain token (`jwt_signing_token`): a client JWT for the
 * provisioner's signing key, issued by the Organization Issuer (`tcs` = the org's signature over
 * `<jti>.<provisioner public key>`).
 */
export function chainSigningToken(orgSeedHex: string, orgPublicHex: string, provisionerPublicHex: string): string {
  const now = Math.floor(Date.now() / 1000);
  const jti = ksuid(now);
  const tcs = sign(null, Buffer.from(`${jti}.${provisionerPublicHex}`), ed25519FromSeedHex(orgSeedHex)).toString('hex');
  return signEdDsaJwt(
    {
      callerid: 'provisioner_signer',
      purpose: 'choria_client_id',
      tcs,
      public_key: provisionerPublicHex,
      iss: `I-${orgPublicHex}`,
      exp: now + 86400,
      nbf: now,
      iat: now,
      jti,
    },
    orgSeedHex,
  );
}

// SimulatedFleet: many emulated provisioning-mode servers in one process.
import { connect, type ConnectionOptions, type NatsConnection } from 'nats';
import { ConnectionGroup } from './connection.js';
import { attachControl } from './control.js';
import { ed25519PrivateFromSeedHex, rsaPrivateFromPem } from './crypto/keys.js';
import { signProvisioningJwt, type ProvisioningJwtSigner } from './crypto/provisioning-jwt.js';
import { parseServerJwtVerification } from './crypto/server-jwt.js';
import { SimulatedNode, type NodeLifecycleState, type NodeRuntime } from './node.js';
import {
  identityFor,
  resolveFleetOptions,
  validIdentity,
  type FleetOptions,
  type ResolvedFleetOptions,
} from './options.js';
import { Rng, deriveSeed, randomSeed } from './random.js';
import { fleetTotals, nodeReport, NODE_STATES, type FleetReport, type FleetSummary } from './report.js';
import { ViolationLog, type ViolationKind } from './violations.js';
import { FilterMatcher } from './wire/filter.js';
import type { ProtocolVersion } from './wire/types.js';
import { createValidators } from './wire/validate.js';

const NODE_SUBJECT_PREFIX = 'provisioning.node.';
/** states from which a node will not move on by itself */
const NO_ACTIONS: ReadonlySet<string> = new Set();
const SETTLED_STATES: ReadonlySet<NodeLifecycleState> = new Set(['provisioned', 'silent', 'vanished', 'shutdown']);

export interface ReportOptions {
  /** first node (in creation order) to include */
  offset?: number;
  /** maximum number of nodes to include */
  limit?: number;
  /** only these identities */
  identities?: string[];
}

async function provisioningJwts(
  o: ResolvedFleetOptions,
  nowMs: number,
): Promise<Partial<Record<ProtocolVersion, string>>> {
  if (o.jwt.signer === 'none') return {};
  const signer: ProvisioningJwtSigner =
    o.jwt.signer === 'rsa'
      ? { alg: 'RS256', key: rsaPrivateFromPem(o.jwt.keyPem ?? '') }
      : { alg: 'EdDSA', key: ed25519PrivateFromSeedHex(o.jwt.seedHex ?? '') };
  const versions: ProtocolVersion[] = o.protocol === 'mixed' ? ['v1', 'v2'] : [o.protocol];
  const out: Partial<Record<ProtocolVersion, string>> = {};
  for (const v of versions) {
    out[v] = await signProvisioningJwt(
      {
        token: o.token,
        secure: o.jwt.chs ?? false,
        brokerUrls: o.servers,
        brokerUser: o.user,
        brokerPassword: o.password,
        extensions: o.jwt.extensions,
        ou: o.jwt.ou,
        v2: v === 'v2',
        update: o.allowUpdate,
        // provisioning by default is what brings a server back after reprovision
        provisionDefault: o.jwt.provisionDefault ?? o.reprovision?.comesBack ?? false,
        nowMs,
      },
      signer,
    );
  }
  return out;
}

function shuffled(n: number, rng: Rng): number[] {
  const a = Array.from({ length: n }, (_v, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const t = a[i] as number;
    a[i] = a[j] as number;
    a[j] = t;
  }
  return a;
}

export class SimulatedFleet {
  readonly name: string;
  readonly startedAt = new Date();
  readonly seed: number;
  /** resolves when the fleet stopped (by stop() or the control subject) */
  readonly stopped: Promise<void>;
  private resolveStopped: () => void = () => undefined;
  private readonly fleetViolations: ViolationLog;
  private readonly byIdentity = new Map<string, SimulatedNode>();
  private readonly allNodes: SimulatedNode[] = [];
  private readonly groups: ConnectionGroup[] = [];
  private readonly bootTimers = new Set<NodeJS.Timeout>();
  private readonly versions = new Set<ProtocolVersion>();
  private stopping: Promise<void> | undefined;

  private constructor(
    private readonly options: ResolvedFleetOptions,
    seed: number,
    private readonly provisioningJwtTexts: Partial<Record<ProtocolVersion, string>>,
  ) {
    this.name = options.name;
    this.seed = seed;
    this.fleetViolations = new ViolationLog(Math.max(options.violationLimit, 1000));
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  static async start(opts: FleetOptions): Promise<SimulatedFleet> {
    const o = resolveFleetOptions(opts);
    const seed = o.seed ?? randomSeed();
    const fleet = new SimulatedFleet(o, seed, await provisioningJwts(o, Date.now()));
    try {
      await fleet.connect();
      fleet.createNodes();
      fleet.bootNodes();
      await Promise.all(fleet.groups.map((g) => g.nc.flush()));
    } catch (e) {
      await fleet.stop();
      throw e;
    }
    o.logger?.info(
      `simulated fleet ${o.name}: ${o.count} nodes on ${fleet.groups.length} connection(s) to ${o.servers.join(',')}`,
    );
    return fleet;
  }

  private async connect(): Promise<void> {
    const o = this.options;
    const count = Math.max(1, Math.ceil(o.count / o.nodesPerConnection));
    const connOpts = (i: number): ConnectionOptions => {
      const c: ConnectionOptions = {
        servers: o.servers,
        name: `choria-simulator:${o.name}:${i}`,
        maxReconnectAttempts: -1,
      };
      if (o.user !== undefined) c.user = o.user;
      if (o.password !== undefined) c.pass = o.password;
      if (o.tls !== undefined) c.tls = { ...o.tls };
      return c;
    };
    const results = await Promise.allSettled(Array.from({ length: count }, (_v, i) => connect(connOpts(i))));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    const ok = results
      .filter((r): r is PromiseFulfilledResult<NatsConnection> => r.status === 'fulfilled')
      .map((r) => r.value);
    if (failed !== undefined) {
      await Promise.all(ok.map((nc) => nc.close().catch(() => undefined)));
      const why = failed.reason instanceof Error ? failed.reason.message : String(failed.reason);
      throw new Error(`could not connect simulated fleet ${o.name} to ${o.servers.join(',')}: ${why}`);
    }
    const validators = createValidators();
    const ctx = {
      validators,
      fleetViolation: (kind: ViolationKind, detail: string) => this.recordFleetViolation(kind, detail),
      fleetSpeaks: (v: ProtocolVersion) => this.versions.has(v),
    };
    ok.forEach((nc, i) => this.groups.push(new ConnectionGroup(nc, i === 0, ctx)));
    this.runtime = {
      timeScale: o.timeScale,
      lockMs: o.lockMs,
      updateMs: o.updateMs,
      rsaBits: o.rsaBits,
      dropRate: o.dropRate,
      latencyMs: o.latencyMs,
      latencyJitterMs: o.latencyJitterMs,
      eventFormat: o.eventFormat,
      serverJwtKeys: parseServerJwtVerification(o.serverJwtVerification),
      validators,
      filter: new FilterMatcher(),
      violationLimit: o.violationLimit,
      logger: o.logger,
      replyHook: o.replyHook,
      reenterAfterMs: o.reenterAfterMs,
      reprovision: o.reprovision,
    };
    const first = this.groups[0];
    if (first !== undefined) {
      // Sees directed requests to nodes that left provisioning mode, which a real fleet never
      // receives, to record provisioner mistakes (configure after a completed provisioning, ...).
      first.nc.subscribe(`${NODE_SUBJECT_PREFIX}>`, {
        callback: (_err, msg) => {
          const node = this.byIdentity.get(msg.subject.slice(NODE_SUBJECT_PREFIX.length));
          if (node !== undefined && !node.listening) node.observeAway(msg.data);
        },
      });
      if (o.control) attachControl(this, first.nc);
    }
  }

  private runtime: NodeRuntime | undefined;

  private createNodes(): void {
    const o = this.options;
    const runtime = this.runtime;
    if (runtime === undefined) throw new Error('simulated fleet runtime is not initialised');
    const rng = new Rng(deriveSeed(this.seed, 0x7fffffff, 1));
    const order = shuffled(o.count, rng);
    const silent = new Set(order.slice(0, o.silentCount));
    const vanish = new Set(order.slice(o.silentCount, o.silentCount + o.vanishCount));
    // chosen from the other end of the same order, so they may overlap neither silent nor vanishing nodes by design
    const lostReplies = new Set(order.slice(order.length - o.lostReplyCount));
    for (let i = 0; i < o.count; i++) {
      const identity = identityFor(o.identityPattern, i);
      if (!validIdentity(identity))
        throw new Error(`invalid simulator option identityPattern: node ${i} would be ${JSON.stringify(identity)}`);
      if (this.byIdentity.has(identity))
        throw new Error(`invalid simulator option identityPattern: identity ${identity} repeats`);
      const protocol: ProtocolVersion = o.protocol === 'mixed' ? (i % 2 === 0 ? 'v1' : 'v2') : o.protocol;
      this.versions.add(protocol);
      const group = this.groups[Math.floor(i / o.nodesPerConnection)];
      if (group === undefined) throw new Error(`no connection for simulated node ${identity}`);
      const node = new SimulatedNode(
        {
          index: i,
          identity,
          protocol,
          token: o.token,
          provisioningJwt: this.provisioningJwtTexts[protocol],
          allowUpdate: o.allowUpdate,
          version: typeof o.version === 'function' ? o.version(i, identity) : o.version,
          configFile: typeof o.configFile === 'function' ? o.configFile(i, identity) : o.configFile,
          facts: typeof o.facts === 'function' ? o.facts(i, identity) : o.facts,
          silent: silent.has(i),
          vanishAfterLockedRpc: vanish.has(i),
          lostReplyActions: lostReplies.has(i) ? o.lostReplyActions : NO_ACTIONS,
          seed: deriveSeed(this.seed, i),
        },
        runtime,
        group,
      );
      this.byIdentity.set(identity, node);
      this.allNodes.push(node);
    }
  }

  private bootNodes(): void {
    const rng = new Rng(deriveSeed(this.seed, 0x7ffffffe, 2));
    for (const node of this.allNodes) {
      const offset = this.options.bootSpreadMs > 0 ? rng.int(this.options.bootSpreadMs) : 0;
      if (offset === 0) {
        node.boot();
        continue;
      }
      const t = setTimeout(() => {
        this.bootTimers.delete(t);
        node.boot();
      }, offset);
      this.bootTimers.add(t);
    }
  }

  recordFleetViolation(kind: ViolationKind, detail: string): void {
    this.fleetViolations.record(kind, detail, Date.now());
    this.options.logger?.debug?.(`simulated fleet ${this.name}: ${kind}: ${detail}`);
  }

  /** The node with this identity. */
  node(identity: string): SimulatedNode | undefined {
    return this.byIdentity.get(identity);
  }

  /** All nodes in creation order. */
  get nodes(): readonly SimulatedNode[] {
    return this.allNodes;
  }

  /** Identities in creation order. */
  identities(): string[] {
    return this.allNodes.map((n) => n.identity);
  }

  /** The provisioning JWT file text nodes of this protocol version carry (undefined without a signer). */
  provisioningJwt(version: ProtocolVersion): string | undefined {
    return this.provisioningJwtTexts[version];
  }

  countByState(): Record<NodeLifecycleState, number> {
    const out = Object.fromEntries(NODE_STATES.map((s) => [s, 0])) as Record<NodeLifecycleState, number>;
    for (const n of this.allNodes) out[n.lifecycle]++;
    return out;
  }

  /** Violations recorded fleet-wide plus on every node. */
  violationCount(kind?: ViolationKind): number {
    return this.allNodes.reduce((sum, n) => sum + n.violations.count(kind), this.fleetViolations.count(kind));
  }

  summary(): FleetSummary {
    return {
      name: this.name,
      startedAt: this.startedAt.toISOString(),
      generatedAt: new Date().toISOString(),
      totals: fleetTotals(this.allNodes, this.fleetViolations),
      fleetViolations: [...this.fleetViolations.entries],
    };
  }

  report(opts: ReportOptions = {}): FleetReport {
    let nodes: SimulatedNode[];
    if (opts.identities !== undefined) {
      nodes = opts.identities.map((id) => this.byIdentity.get(id)).filter((n): n is SimulatedNode => n !== undefined);
    } else {
      const offset = opts.offset ?? 0;
      nodes = this.allNodes.slice(offset, opts.limit === undefined ? undefined : offset + opts.limit);
    }
    return { ...this.summary(), nodes: nodes.map(nodeReport) };
  }

  /** Polls `predicate` until it holds; rejects after timeoutMs. */
  async waitFor(
    predicate: (fleet: SimulatedFleet) => boolean,
    timeoutMs: number,
    description = 'a fleet condition',
  ): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (predicate(this)) return;
      if (Date.now() >= until) {
        const states = Object.entries(this.countByState())
          .filter(([, c]) => c > 0)
          .map(([s, c]) => `${s} ${c}`)
          .join(', ');
        throw new Error(
          `simulated fleet ${this.name}: timed out after ${timeoutMs} ms waiting for ${description} (nodes: ${states})`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Every node has booted (left `booting`). */
  waitForBooted(timeoutMs: number): Promise<void> {
    return this.waitFor((f) => f.countByState().booting === 0, timeoutMs, 'every node to boot');
  }

  /** Every node settled as provisioned, except silent, vanished and shut down ones. */
  waitForAllProvisioned(timeoutMs: number): Promise<void> {
    return this.waitFor(
      (f) => f.allNodes.every((n) => SETTLED_STATES.has(n.lifecycle)),
      timeoutMs,
      'every node to be provisioned',
    );
  }

  /** At least `count` nodes are in `state`. */
  waitForState(state: NodeLifecycleState, count: number, timeoutMs: number): Promise<void> {
    return this.waitFor((f) => f.countByState()[state] >= count, timeoutMs, `${count} node(s) in state ${state}`);
  }

  /** Stops every node and closes the connections (no lifecycle events are published). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const t of this.bootTimers) clearTimeout(t);
      this.bootTimers.clear();
      for (const n of this.allNodes) n.stop();
      await Promise.all(
        this.groups.map(async (g) => {
          try {
            await g.nc.drain();
          } catch {
            await g.nc.close().catch(() => undefined);
          }
        }),
      );
      this.options.logger?.info(`simulated fleet ${this.name} stopped`);
      this.resolveStopped();
    })();
    return this.stopping;
  }
}

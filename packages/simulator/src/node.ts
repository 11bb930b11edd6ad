// One emulated go-choria server in provisioning mode: its subscriptions, the request pipeline of
// its request checks in go-choria's order, its agents and its process lives (restart, update, shutdown).
import {
  ChoriaProvisionAgent,
  LOCKED_ACTIONS,
  PROVISION_AGENT,
  type ProvisionHost,
} from './agents/choria-provision.js';
import { encodeRpcReply, errorReply, parseRpcRequest, StatusCode, type RpcReply } from './agents/mcorpc.js';
import { type ExitKind, type ProvisionState } from './agents/provision-state.js';
import { handleRpcutil, LOADED_AGENTS, RPCUTIL_AGENT } from './agents/rpcutil.js';
import type { ServerJwtKeys } from './crypto/server-jwt.js';
import {
  buildLifecycleEvent,
  PROVISION_MODE_COMPONENT,
  SERVER_COMPONENT,
  type EventFormat,
  type LifecycleEventType,
} from './events.js';
import type { SimulatorLogger } from './logger.js';
import type { ConfigFileKind, ReplyHook } from './options.js';
import { Rng } from './random.js';
import { answerOnFleet, type ReprovisionBehaviour } from './agents/reprovision.js';
import { ViolationLog, type ViolationKind } from './violations.js';
import { collectiveAccepted, decodeRequest, ttlAccepted } from './wire/decode.js';
import { encodeReply } from './wire/encode.js';
import type { FilterMatcher } from './wire/filter.js';
import type { DecodedRequest, ProtocolVersion } from './wire/types.js';
import type { ProtocolValidators } from './wire/validate.js';

export type NodeLifecycleState =
  'booting' | 'waiting' | 'provisioned' | 'upgrading' | 'shutdown' | 'vanished' | 'silent';

export const COLLECTIVES: readonly string[] = ['provisioning'];
export const REPLY_SUBJECT_PREFIX = 'provisioning.reply.';
export const DISCOVERY_AGENT = 'discovery';
/** a provisioning takes five or six directed requests; a few more cover retries */
const RECEIVED_IDS_KEPT = 16;

/** Agent metadata timeouts: past them a server sends no reply at all. */
export const AGENT_DEADLINES_MS: Readonly<Record<string, number>> = {
  [PROVISION_AGENT]: 20_000,
  [RPCUTIL_AGENT]: 2_000,
  [DISCOVERY_AGENT]: 2_000,
};

/** Per-node settings chosen by the fleet. */
export interface NodeSettings {
  index: number;
  identity: string;
  protocol: ProtocolVersion;
  token: string;
  provisioningJwt: string | undefined;
  allowUpdate: boolean;
  version: string;
  /** the configuration file the node boots with in provisioning mode */
  configFile: ConfigFileKind;
  facts: Record<string, unknown>;
  silent: boolean;
  vanishAfterLockedRpc: boolean;
  /** choria_provision actions this node carries out without ever replying */
  lostReplyActions: ReadonlySet<string>;
  seed: number;
}

/** Settings and helpers shared by every node of a fleet. */
export interface NodeRuntime {
  timeScale: number;
  lockMs: number;
  /** release_update's working time before it acts (FleetOptions.updateMs) */
  updateMs: number;
  rsaBits: number;
  dropRate: number;
  latencyMs: number;
  latencyJitterMs: number;
  eventFormat: EventFormat;
  serverJwtKeys: ServerJwtKeys | undefined;
  validators: ProtocolValidators;
  filter: FilterMatcher;
  violationLimit: number;
  logger: SimulatorLogger | undefined;
  replyHook: ReplyHook | undefined;
  /** a restarted node re-enters provisioning mode after this long (0: never) */
  reenterAfterMs: number;
  /** provisioned nodes answer choria_provision#reprovision on their fleet's collective (undefined: not there) */
  reprovision: ReprovisionBehaviour | undefined;
}

/** The node's view of its (shared) NATS connection. */
export interface NodeLink {
  publish(subject: string, payload: Uint8Array | string): void;
  brokerUrl(): string;
  subscribe(subject: string, onMessage: (data: Uint8Array) => void): { unsubscribe(): void };
  /** start or stop receiving the connection's broadcast requests */
  attach(node: SimulatedNode): void;
  detach(node: SimulatedNode): void;
}

export interface NodeStats {
  received: number;
  /** replies withheld: lostReplies nodes and replies a reply hook dropped */
  repliesLost: number;
  replies: number;
  dropped: number;
  filteredOut: number;
  deadlineExceeded: number;
  rpcCounts: Map<string, number>;
}

export class SimulatedNode implements ProvisionHost {
  readonly identity: string;
  readonly protocol: ProtocolVersion;
  readonly index: number;
  readonly rng: Rng;
  readonly state: ProvisionState;
  readonly violations: ViolationLog;
  readonly stats: NodeStats = {
    received: 0,
    repliesLost: 0,
    replies: 0,
    dropped: 0,
    filteredOut: 0,
    deadlineExceeded: 0,
    rpcCounts: new Map(),
  };
  lifecycle: NodeLifecycleState = 'booting';
  /** when the node entered provisioning mode in its current provisioning cycle */
  private waitingSinceMs: number | undefined;
  /** the longest the node ever waited in provisioning mode before it was provisioned or shut down */
  longestWaitMs = 0;

  private readonly agent: ChoriaProvisionAgent;
  /** process-life timers (restart, update, shutdown): cancelled when the node vanishes */
  private readonly timers = new Set<NodeJS.Timeout>();
  /** replies waiting for their simulated latency: still delivered when the node vanishes */
  private readonly replyTimers = new Set<NodeJS.Timeout>();
  private subscription: { unsubscribe(): void } | undefined;
  /** while provisioned: the subscription on the fleet's collective (NodeRuntime.reprovision) */
  private fleetSubscription: { unsubscribe(): void } | undefined;
  /** ids of the last directed requests received while listening, for observeAway */
  private readonly receivedIds: string[] = [];
  private stopped = false;
  /** `agent#action` of directed requests to lose before processing, and how many more (tests) */
  private readonly dropNext = new Map<string, number>();

  constructor(
    readonly settings: NodeSettings,
    private readonly runtime: NodeRuntime,
    private readonly link: NodeLink,
  ) {
    this.identity = settings.identity;
    this.protocol = settings.protocol;
    this.index = settings.index;
    this.rng = new Rng(settings.seed);
    this.violations = new ViolationLog(runtime.violationLimit);
    this.state = {
      version: settings.version,
      token: settings.token,
      provisioningJwt: settings.provisioningJwt,
      allowUpdate: settings.allowUpdate,
      lock: undefined,
      ecdh: undefined,
      ed25519PublicHex: undefined,
      configuration: undefined,
      bootConfigFile: settings.configFile,
      hasServerJwt: false,
      serverJwtClaims: undefined,
      hasCertificate: false,
      hasPrivateKey: false,
      csrPublicKeyPem: undefined,
      policies: undefined,
      pendingExit: undefined,
      configuredCount: 0,
      cycle: 0,
      configuredThisCycle: 0,
      maxConfiguredPerCycle: 0,
      restartCount: 0,
      shutdownCount: 0,
      updateCount: 0,
      reprovisionCount: 0,
    };
    this.agent = new ChoriaProvisionAgent(this);
  }

  // ProvisionHost
  get rsaBits(): number {
    return this.runtime.rsaBits;
  }
  get lockMs(): number {
    return this.runtime.lockMs;
  }
  get updateMs(): number {
    return this.runtime.updateMs;
  }
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => this.later(ms, resolve));
  }
  get serverJwtKeys(): ServerJwtKeys | undefined {
    return this.runtime.serverJwtKeys;
  }
  nowMs(): number {
    return Date.now();
  }

  /** true while the node is subscribed to its provisioning subjects */
  get listening(): boolean {
    return this.lifecycle === 'waiting' || this.lifecycle === 'silent' || this.lifecycle === 'upgrading';
  }

  violation(kind: ViolationKind, detail: string): void {
    this.violations.record(kind, detail, this.nowMs());
    this.runtime.logger?.debug?.(`simulated node ${this.identity}: ${kind}: ${detail}`);
  }

  /** Starts a provisioning-mode process life: subscribe, then announce with a startup event. */
  boot(): void {
    if (this.stopped) return;
    this.state.lock = undefined;
    this.state.ecdh = undefined;
    this.state.pendingExit = undefined;
    if (this.subscription === undefined) {
      this.subscription = this.link.subscribe(`provisioning.node.${this.identity}`, (data) => this.onDirect(data));
      this.link.attach(this);
    }
    this.lifecycle = this.settings.silent ? 'silent' : 'waiting';
    if (this.lifecycle === 'waiting') this.waitingSinceMs ??= this.nowMs();
    this.publishEvent('startup');
  }

  /**
   * How long the node has been in provisioning mode without being provisioned (0 when it is
   * not): a restart into the same provisioning mode (an update) does not start the wait again.
   */
  waitingForMs(now = this.nowMs()): number {
    return this.waitingSinceMs === undefined || !this.listening ? 0 : now - this.waitingSinceMs;
  }

  private endWait(): void {
    if (this.waitingSinceMs !== undefined)
      this.longestWaitMs = Math.max(this.longestWaitMs, this.nowMs() - this.waitingSinceMs);
    this.waitingSinceMs = undefined;
  }

  stop(): void {
    this.stopped = true;
    this.leaveFleet();
    for (const t of [...this.timers, ...this.replyTimers]) clearTimeout(t);
    this.timers.clear();
    this.replyTimers.clear();
    this.leaveSubjects();
  }

  private leaveSubjects(): void {
    if (this.subscription !== undefined) {
      this.subscription.unsubscribe();
      this.subscription = undefined;
      this.link.detach(this);
    }
  }

  private later(ms: number, fn: () => void): void {
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        if (!this.stopped) fn();
      },
      Math.min(Math.max(0, ms), 2 ** 31 - 1),
    );
    this.timers.add(t);
  }

  publishEvent(type: LifecycleEventType, extra: { newVersion?: string } = {}): void {
    const inProvisioning = this.lifecycle !== 'provisioned';
    const ev = buildLifecycleEvent(
      {
        type,
        identity: this.identity,
        component: inProvisioning ? PROVISION_MODE_COMPONENT : SERVER_COMPONENT,
        version: this.state.version,
        ...(extra.newVersion !== undefined ? { newVersion: extra.newVersion } : {}),
        nowMs: this.nowMs(),
      },
      this.runtime.eventFormat,
    );
    if (ev !== undefined) this.link.publish(ev.subject, ev.payload);
  }

  scheduleExit(kind: ExitKind, delayMs: number): void {
    const scaled = delayMs * this.runtime.timeScale;
    switch (kind) {
      case 'restart':
        this.state.restartCount++;
        this.publishEvent('shutdown');
        this.later(scaled, () => {
          // The re-executed process reads the new configuration: no longer in provisioning mode.
          this.leaveSubjects();
          this.state.lock = undefined;
          this.state.ecdh = undefined;
          this.state.pendingExit = undefined;
          this.lifecycle = 'provisioned';
          this.endWait();
          this.publishEvent('startup');
          this.joinFleet();
          if (this.runtime.reenterAfterMs > 0)
            this.later(this.runtime.reenterAfterMs * (0.5 + this.rng.next()), () => this.reenter());
        });
        return;
      case 'update':
        this.state.updateCount++;
        this.lifecycle = 'upgrading';
        this.publishEvent('shutdown');
        this.later(scaled, () => this.boot());
        return;
      case 'shutdown':
        this.state.shutdownCount++;
        this.later(scaled, () => {
          this.lifecycle = 'shutdown';
          this.endWait();
          this.publishEvent('shutdown');
          this.leaveSubjects();
        });
        return;
      case 'crash':
        this.later(scaled, () => this.boot());
        return;
    }
  }

  /**
   * Back into provisioning mode after a provisioned life (reenterAfterMs): the configuration is
   * reset to the provisioning-mode file and a new provisioning cycle starts.
   */
  private reenter(): void {
    if (this.lifecycle !== 'provisioned') return;
    this.leaveFleet();
    this.state.configuration = undefined;
    this.state.cycle++;
    this.state.configuredThisCycle = 0;
    this.receivedIds.length = 0;
    this.boot();
  }

  /** A provisioned life: listens on its fleet's collective for `reprovision`, when the fleet's servers do. */
  private joinFleet(): void {
    const behaviour = this.runtime.reprovision;
    if (behaviour === undefined || this.fleetSubscription !== undefined) return;
    this.fleetSubscription = this.link.subscribe(`${behaviour.collective}.node.${this.identity}`, (data) =>
      this.onFleetRequest(behaviour, data),
    );
  }

  private leaveFleet(): void {
    this.fleetSubscription?.unsubscribe();
    this.fleetSubscription = undefined;
  }

  /** A request on the fleet's collective while provisioned (agents/reprovision.ts answers it). */
  private onFleetRequest(behaviour: ReprovisionBehaviour, data: Uint8Array): void {
    const decoded = decodeRequest(data, this.runtime.validators);
    if (!decoded.ok || this.lifecycle !== 'provisioned') return;
    const req = decoded.request;
    if (!collectiveAccepted(req, [behaviour.collective]) || req.replyTo === undefined) return;
    const rpc = parseRpcRequest(req.payload);
    if (!rpc.ok) return;
    this.count(`${req.agent}#${rpc.body.action}`);
    const { reply, restartAfterS } = answerOnFleet(
      behaviour,
      req.agent,
      rpc.body.action,
      rpc.body.data,
      this.state.token,
      (b) => this.rng.int(b),
    );
    this.link.publish(
      req.replyTo,
      encodeReply({
        version: req.version,
        requestId: req.requestId,
        identity: this.identity,
        agent: req.agent,
        body: encodeRpcReply(reply),
        brokerUrl: this.link.brokerUrl(),
        nowMs: this.nowMs(),
      }),
    );
    if (restartAfterS === undefined) return;
    this.state.reprovisionCount++;
    this.leaveFleet();
    this.later(restartAfterS * 1000 * this.runtime.timeScale, () => {
      if (behaviour.comesBack) return this.reenter();
      this.violation('stranded', `reprovision request ${req.requestId} sent to a node that cannot provision again`);
      this.lifecycle = 'vanished';
    });
  }

  /** Marks the node gone without a trace (no events), as after a crash or network loss. */
  vanish(): void {
    this.lifecycle = 'vanished';
    this.leaveFleet();
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    this.leaveSubjects();
  }

  /** Loses the next `times` directed `agent#action` requests before they are processed (as on a lossy link). */
  dropNextDirected(agent: string, action: string, times = 1): void {
    const key = `${agent}#${action}`;
    this.dropNext.set(key, (this.dropNext.get(key) ?? 0) + times);
  }

  private loseScripted(req: DecodedRequest): boolean {
    const rpc = parseRpcRequest(req.payload);
    const key = `${req.agent}#${rpc.ok ? rpc.body.action : ''}`;
    const left = this.dropNext.get(key) ?? 0;
    if (left <= 0) return false;
    if (left === 1) this.dropNext.delete(key);
    else this.dropNext.set(key, left - 1);
    this.stats.dropped++;
    return true;
  }

  /** True when the reply to a successful choria_provision action must not be sent. */
  private async withholdReply(action: string): Promise<boolean> {
    let lose = this.settings.lostReplyActions.has(action);
    if (!lose && this.runtime.replyHook !== undefined) {
      lose = (await this.runtime.replyHook({ identity: this.identity, agent: PROVISION_AGENT, action })) === 'drop';
    }
    if (lose) this.stats.repliesLost++;
    return lose;
  }

  private count(key: string): void {
    this.stats.rpcCounts.set(key, (this.stats.rpcCounts.get(key) ?? 0) + 1);
  }

  private remember(requestId: string): void {
    this.receivedIds.push(requestId);
    if (this.receivedIds.length > RECEIVED_IDS_KEPT) this.receivedIds.shift();
  }

  /** A message on provisioning.node.<identity>. */
  onDirect(data: Uint8Array): void {
    if (!this.listening) return;
    this.stats.received++;
    if (this.rng.chance(this.runtime.dropRate)) {
      this.stats.dropped++;
      // lost before processing, but it did reach the node while it listened (see observeAway)
      const lost = decodeRequest(data, this.runtime.validators);
      if (lost.ok) this.remember(lost.request.requestId);
      return;
    }
    const decoded = decodeRequest(data, this.runtime.validators);
    if (decoded.ok) this.remember(decoded.request.requestId);
    if (!decoded.ok) {
      this.violation(
        'schema',
        decoded.requestId === undefined ? decoded.detail : `request ${decoded.requestId}: ${decoded.detail}`,
      );
      return;
    }
    const req = decoded.request;
    if (req.version !== this.protocol) {
      this.violation('protocol-version', `${req.version} request ${req.requestId} to a ${this.protocol} node`);
      return;
    }
    if (
      !this.runtime.filter.matches(req.filter, {
        identity: this.identity,
        agents: LOADED_AGENTS,
        facts: this.settings.facts,
      })
    ) {
      this.stats.filteredOut++;
      return;
    }
    if (!collectiveAccepted(req, COLLECTIVES)) {
      this.violation('collective', `request ${req.requestId} for collective ${JSON.stringify(req.collective)}`);
      return;
    }
    if (!ttlAccepted(req, this.nowMs())) {
      this.violation(
        'ttl-expired',
        `request ${req.requestId} created at ${new Date(req.timeMs).toISOString()} ` +
          `with ttl ${req.ttl}s is outside its validity`,
      );
      return;
    }
    if (this.dropNext.size > 0 && this.loseScripted(req)) return;
    const exiting = this.state.pendingExit;
    if (exiting === 'restart' || exiting === 'update') this.noteRequestWhileExiting(req, exiting);
    void this.dispatch(req, false);
  }

  /**
   * A broadcast request already decoded, collective- and TTL-checked once for the whole connection;
   * a node of the other protocol version silently ignores it.
   */
  onBroadcast(req: DecodedRequest): void {
    if (!this.listening) return;
    this.stats.received++;
    if (req.version !== this.protocol) return;
    if (
      !this.runtime.filter.matches(req.filter, {
        identity: this.identity,
        agents: LOADED_AGENTS,
        facts: this.settings.facts,
      })
    ) {
      this.stats.filteredOut++;
      return;
    }
    // Drawn only by the nodes a broadcast is for: a probe of one identity leaves every other
    // node's sequence of drops (fixed by the seed) as it was.
    if (this.rng.chance(this.runtime.dropRate)) {
      this.stats.dropped++;
      return;
    }
    void this.dispatch(req, true);
  }

  /**
   * A directed request seen by the fleet's observer while this node is not in provisioning mode:
   * a real server would never see it; the simulator records what the provisioner got wrong.
   */
  observeAway(data: Uint8Array): void {
    if (this.lifecycle !== 'provisioned' && this.lifecycle !== 'shutdown') return;
    const decoded = decodeRequest(data, this.runtime.validators);
    if (!decoded.ok) return;
    const req = decoded.request;
    // The observer runs on its own connection and can lag behind the node: a request the node
    // itself received while it listened was no mistake, however late the observer sees it (with
    // a small timeScale the node restarts within milliseconds of its configure).
    if (this.receivedIds.includes(req.requestId)) return;
    const rpc = req.agent === PROVISION_AGENT ? parseRpcRequest(req.payload) : undefined;
    const what = rpc?.ok === true ? `${req.agent}#${rpc.body.action}` : req.agent;
    if (this.lifecycle === 'shutdown') {
      this.violation('after-shutdown', `${what} request ${req.requestId} sent to a node that shut down`);
    } else if (rpc?.ok === true && rpc.body.action === 'configure') {
      this.violation(
        'configured-twice',
        `configure request ${req.requestId} sent to a node that already completed configure and restart`,
      );
    } else {
      this.violation(
        'after-restart',
        `${what} request ${req.requestId} sent to a node that restarted out of provisioning mode`,
      );
    }
  }

  /**
   * A real server that accepted restart or release_update answers nothing more (its agent
   * mutex is held until the process is replaced): any directed request now is a wasted request
   * and a protocol error for a strict fleet. configure is recorded by the agent itself
   * (configure-after-restart).
   */
  private noteRequestWhileExiting(req: DecodedRequest, exiting: ExitKind): void {
    const rpc = req.agent === PROVISION_AGENT || req.agent === RPCUTIL_AGENT ? parseRpcRequest(req.payload) : undefined;
    const action = rpc?.ok === true ? rpc.body.action : '';
    if (req.agent === PROVISION_AGENT && action === 'configure') return;
    const what = action === '' ? req.agent : `${req.agent}#${action}`;
    this.violation(
      'after-restart',
      `${what} request ${req.requestId} sent after ${exiting === 'update' ? 'release_update' : 'restart'} was accepted`,
    );
  }

  private async dispatch(req: DecodedRequest, broadcast: boolean): Promise<void> {
    const started = this.nowMs();
    let replyAllowed = true;
    const checkReplySubject = (): void => {
      if (req.replyTo === undefined || req.replyTo === '') {
        this.violation('reply-subject', `request ${req.requestId} has no reply subject`);
        replyAllowed = false;
      } else if (!req.replyTo.startsWith(REPLY_SUBJECT_PREFIX)) {
        this.violation(
          'reply-subject',
          `request ${req.requestId} asks for replies on ${req.replyTo}; ` +
            `provisioning servers may only publish to provisioning.reply.>`,
        );
        replyAllowed = false;
      }
    };

    let body: string | undefined;
    let locked = false;
    let succeededAction: string | undefined;
    if (req.agent === DISCOVERY_AGENT) {
      this.count(DISCOVERY_AGENT);
      if (!req.payload.includes('ping')) {
        if (!broadcast)
          this.violation(
            'discovery-payload',
            `discovery request ${req.requestId} payload does not contain ping after the server's base64 decode attempt`,
          );
        return;
      }
      checkReplySubject();
      if (this.lifecycle === 'silent') return;
      body = 'pong';
    } else if (req.agent === RPCUTIL_AGENT || req.agent === PROVISION_AGENT) {
      const rpc = parseRpcRequest(req.payload);
      let reply: RpcReply | undefined;
      if (!rpc.ok) {
        this.count(`${req.agent}#`);
        checkReplySubject();
        this.violation('bad-input', `Could not process request: ${rpc.error}`);
        if (this.lifecycle === 'silent') return;
        reply = errorReply('', StatusCode.InvalidData, `Could not process request: ${rpc.error}`);
      } else {
        const action = rpc.body.action;
        this.count(`${req.agent}#${action}`);
        checkReplySubject();
        if (this.lifecycle === 'silent') return;
        if (req.agent === RPCUTIL_AGENT) {
          reply = handleRpcutil(
            action,
            { version: this.state.version, upgradable: this.state.allowUpdate, facts: this.settings.facts },
            this.nowMs(),
          );
          if (reply.statuscode === StatusCode.UnknownAction)
            this.violation('unknown-action', `rpcutil#${action} is not implemented`);
        } else {
          locked = LOCKED_ACTIONS.has(action);
          reply = await this.agent.handle(req, action, rpc.body.data);
          if (reply?.statuscode === StatusCode.OK) succeededAction = action;
        }
      }
      if (reply === undefined) return;
      body = encodeRpcReply(reply);
    } else {
      this.violation(
        'unknown-action',
        `request ${req.requestId} for agent ${JSON.stringify(req.agent)}, which is not loaded`,
      );
      return;
    }

    if (locked && this.settings.vanishAfterLockedRpc && this.lifecycle === 'waiting') {
      // Reply to this one, then disappear.
      queueMicrotask(() => this.vanish());
    }
    if (!replyAllowed || req.replyTo === undefined) return;
    if (succeededAction !== undefined && (await this.withholdReply(succeededAction))) return;
    const latency =
      this.runtime.latencyMs + (this.runtime.latencyJitterMs > 0 ? this.rng.int(this.runtime.latencyJitterMs + 1) : 0);
    const deadline = AGENT_DEADLINES_MS[req.agent] ?? 10_000;
    if (this.nowMs() - started + latency >= deadline) {
      this.stats.deadlineExceeded++;
      return;
    }
    const replyTo = req.replyTo;
    const payload = body;
    const send = (): void => {
      this.stats.replies++;
      this.link.publish(
        replyTo,
        encodeReply({
          version: req.version,
          requestId: req.requestId,
          identity: this.identity,
          agent: req.agent,
          body: payload,
          brokerUrl: this.link.brokerUrl(),
          nowMs: this.nowMs(),
        }),
      );
    };
    if (latency > 0) {
      const t = setTimeout(() => {
        this.replyTimers.delete(t);
        send();
      }, latency);
      this.replyTimers.add(t);
    } else {
      send();
    }
  }
}

// The Choria RPC client: discovery, directed MCORPC requests and lifecycle events over one NATS
// connection. All state lives on the instance so several clients can share a process.
import { performance } from 'node:perf_hooks';
import { ErrorCode, type Msg, type NatsConnection, type NatsError, type Status, type Subscription } from 'nats';
import type { Logger } from 'winston';
import type { ChoriaSettings } from '../config/types.js';
import { formatMs } from '../util/duration.js';
import { PATH_PROBE_MS, SILENT_TIMEOUTS, SilentPathDetector } from './silent-path.js';
import { connectChoria } from './connector.js';
import { closeNatsConnection } from './nats-close.js';
import { actionTimeoutMs } from './ddl/registry.js';
import { validateInputs } from './ddl/validate.js';
import {
  ClientClosedError,
  ProtocolError,
  RpcAbortError,
  RpcError,
  RpcInputError,
  RpcReplyLostError,
  RpcResponseCountError,
  RpcUnsendableError,
  SecurityError,
  type RpcStatusDetails,
} from './errors.js';
import {
  encodeLifecycleEvent,
  newLifecycleEvent,
  parseLifecycleEvent,
  type LifecycleEvent,
  type LifecycleFormat,
  type LifecycleType,
  type ReceivedLifecycleEvent,
} from './lifecycle.js';
import { IdentityRefusedError, RefusedIdentities, shownIdentity, type NodeIdentity } from './identity.js';
import { BrokerLink } from './link.js';
import { DirectedRequest, DiscoveryRequest, LOST_REPLY_TEXT, type RequestMux } from './request.js';
import { codecFor, DISCOVERY_PAYLOAD } from './protocol/codec.js';
import { agentFilter, type Filter } from './protocol/filter.js';
import { newKsuid, newV1RequestId, nowNanoseconds, RandomPool } from './protocol/ids.js';
import { encodeRpcRequest, parseRpcReply, rpcStatusError, type RpcReplyBody } from './protocol/mcorpc.js';
import {
  broadcastSubject,
  directedSubject,
  lifecycleSubject,
  PROVISIONING_COLLECTIVE,
  replySubjectPrefix,
  replyWildcard,
} from './protocol/subjects.js';
import type { DecodedReply, DecodedTransport, ProtocolCodec, ProtocolVersion, TraceHop } from './protocol/types.js';
import { V1_MIN_TTL } from './protocol/v1.js';
import { createSigner, selectProtocol } from './security/select.js';
import type { RequestSigner } from './security/types.js';
import { errorText } from '../util/values.js';
import { LogBudget } from '../util/log-budget.js';

/** A successful reply: the MCORPC reply details (status 0) and how long it took. */
export interface RpcReply extends RpcStatusDetails {
  readonly durationMs: number;
}

export interface RpcOptions {
  /** default: discovery_timeout + the agent's DDL timeout (22 s for choria_provision, 4 s for rpcutil) */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * When the broker connection drops and comes back while this request is outstanding, wait this
   * long for a late reply (the target's client buffers its reply until it is reconnected too)
   * before failing with RpcReplyLostError. Default 0: fail at once, so an idempotent request is
   * retried now instead of after its full timeout.
   */
  readonly reconnectGraceMs?: number;
}

export interface DiscoverOptions {
  /** nodes must have this agent (default `choria_provision`) */
  readonly agent?: string;
  /** identity filter entries (exact names or /regex/) */
  readonly identityFilter?: readonly string[];
  /** overall limit (default 2000 ms) */
  readonly timeoutMs?: number;
  /** wait for a first reply (default discovery_timeout) */
  readonly initialWaitMs?: number;
  /** sliding window after each reply (default 300 ms) */
  readonly windowMs?: number;
  /**
   * Keep listening until the overall limit even after a quiet spell (no sliding window): for a
   * caller that acts on each node as it is found (`onFound`), ending early saves nothing, and
   * listening on catches nodes that answer late.
   */
  readonly listenToEnd?: boolean;
  /** finish as soon as this many distinct nodes answered (an identity probe needs one) */
  readonly limit?: number;
  /**
   * Called once per node as its first reply arrives, before the discovery ends: a caller can start
   * on the first nodes while the quiet window after the last reply runs out (the result still
   * lists every node).
   */
  readonly onFound?: (identity: NodeIdentity) => void;
  readonly signal?: AbortSignal;
}

export interface ChoriaClientOptions {
  readonly logger: Logger;
  /** default: created from the settings for `protocol` */
  readonly signer?: RequestSigner;
  /** default: the signer's version, else selectProtocol(settings) */
  readonly protocol?: ProtocolVersion;
  /** close the NATS connection in close() (default false for an embedded connection) */
  readonly ownsConnection?: boolean;
  /** where identities that fail the identity rule go (default: logged once each, not counted) */
  readonly refusals?: RefusedIdentities;
  /** how long the servers are given to reconnect after the broker link returns (BrokerLink; default 5 s) */
  readonly fleetReconnectMs?: number;
  /** the collective requests go to (default `provisioning`; renewals reach the fleet's own) */
  readonly collective?: string;
}

export interface ConnectClientOptions {
  readonly logger: Logger;
  readonly name?: string;
  readonly protocol?: ProtocolVersion;
  readonly onStatus?: (status: Status) => void;
  readonly signal?: AbortSignal;
  readonly maxConnectAttempts?: number;
  readonly refusals?: RefusedIdentities;
  readonly fleetReconnectMs?: number;
  /** the collective requests go to (default `provisioning`) */
  readonly collective?: string;
}

export interface LifecycleSubscriptionOptions {
  readonly queue?: string;
  /** called for events that fail to parse (default: logged at warn level) */
  readonly onInvalid?: (err: Error, raw: Uint8Array) => void;
  /**
   * called for events whose identity fails the identity rule (default: ignored, as several
   * subscriptions hear one event and the one that takes nodes in refuses it)
   */
  readonly onRefused?: (err: IdentityRefusedError) => void;
}

export interface LifecycleSubscription {
  unsubscribe(): void;
}

const DEFAULT_DISCOVERY_AGENT = 'choria_provision';
const DEFAULT_DISCOVERY_TIMEOUT_MS = 2_000;
const DEFAULT_DISCOVERY_WINDOW_MS = 300;
/**
 * The longest subject published: every subject built here (an identity passes the identity rule)
 * is far shorter, and the broker's control line (4,096 bytes by default) holds the subject too.
 */
const MAX_SUBJECT_BYTES = 1_024;

export class ChoriaClient {
  readonly identity: string;
  readonly senderId: string;
  readonly callerId: string;
  readonly protocol: ProtocolVersion;
  /** the underlying connection (shared with leader election and JetStream users) */
  readonly nats: NatsConnection;
  /** the broker link: up, its epoch, settled after a return (choria/link.ts) */
  readonly link: BrokerLink;

  readonly #settings: ChoriaSettings;
  readonly #logger: Logger;
  /** warnings a stranger can cause, within the log's budget */
  readonly #budget: LogBudget;
  readonly #signer: RequestSigner;
  readonly #codec: ProtocolCodec;
  /** where requests go and replies come: `provisioning`, unless the client was made for another (renewals) */
  readonly #collective: string;
  readonly #ttl: number;
  readonly #replyPrefix: string;
  readonly #replySubscription: Subscription;
  readonly #pending: RequestMux = new Map();
  readonly #entropy = new RandomPool();
  readonly #outbox: { subject: string; bytes: Uint8Array; what: string; fail: (err: Error) => void }[] = [];
  readonly #lifecycleSubscriptions = new Set<Subscription>();
  readonly #ownsConnection: boolean;
  /** where identities of discovery replies and other replies that fail the identity rule go */
  readonly refusals: RefusedIdentities;
  #closed = false;
  /** requests timing out while nothing comes in: a path gone silent (silent-path.ts) */
  readonly #silentPath = new SilentPathDetector();
  /** a ping is out to check the path after a silent burst */
  #probingPath = false;

  /** Connects to the broker of `settings` (retrying until it is reachable) and starts the client. */
  static async connect(settings: ChoriaSettings, opts: ConnectClientOptions): Promise<ChoriaClient> {
    const selection = selectProtocol(settings);
    const version = opts.protocol ?? selection.version;
    opts.logger.info(
      opts.protocol !== undefined
        ? `using Choria protocol ${version} (requested explicitly)`
        : `using Choria protocol ${version}: ${selection.reason}`,
    );
    // load key material before connecting so configuration mistakes fail fast
    const signer = createSigner(settings, version);
    const nc = await connectChoria(settings, {
      logger: opts.logger,
      ...(opts.name !== undefined ? { name: opts.name } : {}),
      ...(opts.onStatus !== undefined ? { onStatus: opts.onStatus } : {}),
      ...(opts.signal !== undefined ? { signal: opts.signal } : {}),
      ...(opts.maxConnectAttempts !== undefined ? { maxConnectAttempts: opts.maxConnectAttempts } : {}),
      ...(opts.collective !== undefined ? { collective: opts.collective } : {}),
    });
    const refusals = opts.refusals !== undefined ? { refusals: opts.refusals } : {};
    const fleet = opts.fleetReconnectMs !== undefined ? { fleetReconnectMs: opts.fleetReconnectMs } : {};
    return new ChoriaClient(nc, settings, {
      logger: opts.logger,
      signer,
      protocol: version,
      ownsConnection: true,
      ...refusals,
      ...fleet,
      ...(opts.collective !== undefined ? { collective: opts.collective } : {}),
    });
  }

  constructor(nc: NatsConnection, settings: ChoriaSettings, opts: ChoriaClientOptions) {
    const version = opts.protocol ?? opts.signer?.protocol ?? selectProtocol(settings).version;
    const signer = opts.signer ?? createSigner(settings, version);
    if (signer.protocol !== version)
      throw new SecurityError(`a ${signer.protocol} ${signer.kind} signer cannot be used for protocol ${version}`);
    if (settings.identity === '') throw new Error(`the Choria identity is empty in ${settings.source}`);

    this.nats = nc;
    this.#settings = settings;
    this.#collective = opts.collective ?? PROVISIONING_COLLECTIVE;
    this.#logger = opts.logger;
    this.#budget = new LogBudget(opts.logger);
    this.#signer = signer;
    this.#codec = codecFor(version);
    this.protocol = version;
    this.identity = settings.identity;
    this.senderId = settings.identity;
    this.callerId = signer.callerId;
    this.#ownsConnection = opts.ownsConnection ?? false;
    this.refusals = opts.refusals ?? new RefusedIdentities(opts.logger);
    const fleetReconnectMs = opts.fleetReconnectMs;
    this.link = new BrokerLink({
      closed: () => nc.isClosed(),
      ...(fleetReconnectMs !== undefined ? { fleetReconnectMs } : {}),
    });

    const minTtl = version === 'v1' ? V1_MIN_TTL : 1;
    this.#ttl = Math.max(minTtl, Math.floor(settings.ttl));
    if (this.#ttl !== settings.ttl)
      this.#logger.warn(
        `request ttl ${settings.ttl} from ${settings.source} raised to ${this.#ttl} s (protocol ${version} minimum)`,
      );

    // One wildcard subscription for every reply, made before anything is published: replies are
    // routed by the last subject token (the request id), so no per-request SUB/UNSUB round trips.
    // nats.js has no client-side pending limits (callbacks run inline as messages are parsed), so
    // bursts of thousands of replies are never dropped by the client.
    this.#replyPrefix = replySubjectPrefix(this.callerId, this.#collective);
    this.#replySubscription = nc.subscribe(replyWildcard(this.callerId, this.#collective), {
      callback: (err, msg) => this.#dispatchReply(err, msg),
    });
    void nc
      .closed()
      .then(() => this.#failPending(new ClientClosedError('the NATS connection of the Choria client closed')));
    void this.#watchReconnects();
  }

  /**
   * Requests in flight when the broker connection dropped have lost their replies (the broker kept
   * no state for them), and requests published while it was down are sent on the way back, when
   * their targets may not have reconnected yet: nobody may hear them. Either way the reply is in
   * doubt, so every request pending at the reconnect is failed (after its grace for a late reply)
   * as soon as the connection is back: the caller checks now instead of after the full timeout.
   */
  async #watchReconnects(): Promise<void> {
    for await (const s of this.nats.status()) {
      if (s.type === 'disconnect') {
        this.link.dropped();
      } else if (s.type === 'reconnect') {
        if (!this.link.restored()) continue;
        const cutoff = performance.now();
        for (const p of [...this.#pending.values()]) {
          if (p.sentAt === undefined || p.sentAt > cutoff) continue;
          if (p.onReconnect !== undefined) p.onReconnect();
          else p.onClose(new RpcReplyLostError(LOST_REPLY_TEXT));
        }
      }
    }
  }

  /** True after close() or once the NATS connection has closed for good. */
  get isClosed(): boolean {
    return this.#closed || this.nats.isClosed();
  }

  /** Broadcast discovery: identities of nodes that have `agent`, de-duplicated. */
  async discover(opts: DiscoverOptions = {}): Promise<NodeIdentity[]> {
    this.#assertOpen();
    const agent = opts.agent ?? DEFAULT_DISCOVERY_AGENT;
    const timeoutMs = opts.timeoutMs ?? DEFAULT_DISCOVERY_TIMEOUT_MS;
    const initialWaitMs = opts.initialWaitMs ?? this.#settings.discoveryTimeout * 1000;
    // listening to the end: a window no reply can bring before the overall limit
    const windowMs = opts.listenToEnd === true ? timeoutMs : (opts.windowMs ?? DEFAULT_DISCOVERY_WINDOW_MS);
    const signal = opts.signal;
    if (signal?.aborted === true)
      throw new RpcAbortError(`discovery aborted: ${errorText(signal.reason)}`, signal.reason);

    const id = this.#newRequestId();
    const { subject, bytes } = this.#encode(
      id,
      'discovery',
      broadcastSubject('discovery', this.#collective),
      agentFilter(agent, opts.identityFilter ?? []),
      DISCOVERY_PAYLOAD,
    );

    const request = new DiscoveryRequest({
      id,
      mux: this.#pending,
      ...(signal !== undefined ? { signal } : {}),
      logger: this.#logger,
      timeoutMs,
      initialWaitMs,
      windowMs,
      ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
      ...(opts.onFound !== undefined ? { onFound: opts.onFound } : {}),
      sender: (msg) => this.#discoverySender(msg, id),
    });
    this.#publish(subject, bytes, 'discovery request', (err) => request.fail(err));
    return await request.promise;
  }

  /**
   * One directed MCORPC request to `identity`. Resolves with the target's
   * reply when it has status 0; rejects with a typed error otherwise.
   */
  async rpc(
    identity: string,
    agent: string,
    action: string,
    data: Record<string, unknown>,
    opts: RpcOptions = {},
  ): Promise<RpcReply> {
    this.#assertOpen();
    validateInputs(agent, action, data);
    let subject: string;
    try {
      subject = directedSubject(identity, this.#collective);
    } catch (err) {
      throw new RpcInputError([(err as Error).message]);
    }
    const what = `request ${agent}#${action} to ${identity}`;
    const timeoutMs = opts.timeoutMs ?? this.#settings.discoveryTimeout * 1000 + actionTimeoutMs(agent);
    const signal = opts.signal;
    if (signal?.aborted === true)
      throw new RpcAbortError(`${what} aborted: ${errorText(signal.reason)}`, signal.reason);

    const id = this.#newRequestId();
    const encoded = this.#encode(id, agent, subject, agentFilter(agent), encodeRpcRequest(agent, action, data));

    const receivedBefore = this.nats.stats().inMsgs;
    const request = new DirectedRequest<RpcReply>({
      id,
      mux: this.#pending,
      ...(signal !== undefined ? { signal } : {}),
      logger: this.#logger,
      budget: this.#budget,
      identity,
      what,
      timeoutMs,
      reconnectGraceMs: opts.reconnectGraceMs ?? 0,
      decode: (msg) => this.#decodeReply(msg, id, what),
      admitSender: (sender) => this.refusals.admit(sender, 'reply') !== undefined,
      result: (reply, responses, durationMs) => this.#rpcResult(reply, identity, what, responses, durationMs),
      timedOut: () => this.#timedOut(this.nats.stats().inMsgs - receivedBefore),
    });
    this.#publish(encoded.subject, encoded.bytes, what, (err) => request.fail(err));
    return await request.promise;
  }

  /**
   * A request timed out with `received` messages arriving on the connection meanwhile. Several in a
   * row with nothing at all received, while the connection claims to be up: its path went silent
   * without closing. The connection is replaced (nats.js reconnects and resubscribes); requests
   * that went out on it are handled as lost replies.
   */
  #timedOut(received: number): void {
    // a connection handed in belongs to its owner, who decides when it is replaced
    if (
      !this.#silentPath.timedOut(received) ||
      !this.link.state.up ||
      this.#closed ||
      !this.#ownsConnection ||
      this.#probingPath
    )
      return;
    // Nodes that vanished time out the same way: the broker is asked for a round trip (a PING),
    // and only a path that does not carry that either is replaced.
    this.#probingPath = true;
    const linkBefore = this.link.state.changes;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), PATH_PROBE_MS)));
    void Promise.race([
      this.nats.flush().then(
        () => 'answered' as const,
        () => 'failed' as const,
      ),
      late,
    ])
      .then((answer) => {
        if (answer !== 'late' || this.#closed || this.link.state.changes !== linkBefore) return;
        this.#logger.warn(
          `${SILENT_TIMEOUTS} requests in a row timed out while nothing at all came in on the broker connection, ` +
            `and the broker did not answer a ping within ${formatMs(PATH_PROBE_MS)}: ` +
            `its path went silent, replacing the connection`,
        );
        this.nats
          .reconnect()
          .catch((err: unknown) => this.#logger.warn(`Could not replace the broker connection: ${errorText(err)}`));
      })
      .finally(() => {
        clearTimeout(timer);
        this.#probingPath = false;
      });
  }

  /** Publishes a lifecycle event on `choria.lifecycle.event.<type>.<component>`. */
  publishLifecycleEvent(event: LifecycleEvent, format: LifecycleFormat = event.format): void {
    this.#assertOpen();
    this.nats.publish(lifecycleSubject(event.type, event.component), encodeLifecycleEvent(event, format));
  }

  /** The provisioner's own startup event, Choria format. */
  publishStartupEvent(opts: { component: string; version: string }): LifecycleEvent {
    const event = newLifecycleEvent({
      type: 'startup',
      identity: this.identity,
      component: opts.component,
      version: opts.version,
    });
    this.publishLifecycleEvent(event, 'choria');
    return event;
  }

  /** Subscribes to lifecycle events of `type` from `component` (`*` allowed for either). */
  subscribeLifecycle(
    type: LifecycleType | '*' | (string & {}),
    component: string,
    handler: (event: ReceivedLifecycleEvent) => void,
    opts: LifecycleSubscriptionOptions = {},
  ): LifecycleSubscription {
    this.#assertOpen();
    const subject = lifecycleSubject(type, component);
    const sub = this.nats.subscribe(subject, {
      ...(opts.queue !== undefined && opts.queue !== '' ? { queue: opts.queue } : {}),
      callback: (err, msg) => {
        if (err !== null) {
          this.#logger.error(`lifecycle subscription ${subject} failed: ${err.message}`);
          return;
        }
        let event: ReceivedLifecycleEvent;
        try {
          event = parseLifecycleEvent(msg.data);
        } catch (parseErr) {
          if (parseErr instanceof IdentityRefusedError) return opts.onRefused?.(parseErr);
          if (opts.onInvalid !== undefined) opts.onInvalid(parseErr as Error, msg.data);
          else this.#budget.warn('refused-event', `ignoring message on ${msg.subject}: ${(parseErr as Error).message}`);
          return;
        }
        try {
          handler(event);
        } catch (handlerErr) {
          this.#logger.error(`lifecycle handler for ${subject} failed: ${(handlerErr as Error).message}`);
        }
      },
    });
    this.#lifecycleSubscriptions.add(sub);
    return {
      unsubscribe: () => {
        if (!this.#lifecycleSubscriptions.delete(sub)) return;
        sub.unsubscribe();
      },
    };
  }

  /** Fails outstanding requests, drops the subscriptions, and closes the connection if it owns it. */
  async close(): Promise<void> {
    // what the log's budget left out is summed up now, not after the process may have gone
    this.#budget.flush();
    if (this.#closed) return;
    this.#closed = true;
    this.#failPending(new ClientClosedError('the Choria client was closed'));
    for (const sub of this.#lifecycleSubscriptions) sub.unsubscribe();
    this.#lifecycleSubscriptions.clear();
    if (!this.nats.isClosed()) this.#replySubscription.unsubscribe();
    if (this.#ownsConnection && !this.nats.isClosed()) await closeNatsConnection(this.nats);
  }

  #assertOpen(): void {
    if (this.#closed) throw new ClientClosedError('the Choria client is closed');
  }

  #failPending(err: Error): void {
    const waiting = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of waiting) p.onClose(err);
  }

  #newRequestId(): string {
    return this.protocol === 'v1' ? newV1RequestId() : newKsuid(Date.now(), this.#entropy.take(16));
  }

  #traceHop(): TraceHop[] | undefined {
    const server = this.nats.getServer();
    if (server === '') return undefined;
    const url = server.includes('://') ? server : `nats://${server}`;
    return [[url, this.identity, url]];
  }

  #encode(
    id: string,
    agent: string,
    subject: string,
    filter: Filter,
    payload: string,
  ): { subject: string; bytes: Uint8Array } {
    const trace = this.#traceHop();
    const encoded = this.#codec.encodeRequest(
      {
        id,
        sender: this.senderId,
        callerId: this.callerId,
        collective: this.#collective,
        agent,
        ttl: this.#ttl,
        timeNs: nowNanoseconds(),
        filter,
        payload,
        replyTo: `${this.#replyPrefix}${id}`,
        ...(trace !== undefined ? { trace } : {}),
      },
      this.#signer,
    );
    return { subject, bytes: Buffer.from(encoded.transportJson, 'utf8') };
  }

  /**
   * Requests are handed to nats.js once per event-loop turn instead of one by one: nats.js writes
   * what was published within one microtask run as one socket write, and replies arriving together
   * trigger their follow-up requests over several microtask hops, so publishing each at once cost
   * one write syscall (and one broker read) per request under load.
   */
  #publish(subject: string, bytes: Uint8Array, what: string, fail: (err: Error) => void): void {
    // a subject this long makes a broker with the default max_control_line close the connection
    if (Buffer.byteLength(subject, 'utf8') > MAX_SUBJECT_BYTES) {
      fail(new RpcUnsendableError(`${what} was not sent: its subject is longer than ${MAX_SUBJECT_BYTES} bytes`));
      return;
    }
    this.#outbox.push({ subject, bytes, what, fail });
    if (this.#outbox.length === 1) setImmediate(this.#flushOutbox);
  }

  readonly #flushOutbox = (): void => {
    const batch = this.#outbox.splice(0);
    for (const { subject, bytes, what, fail } of batch) {
      try {
        this.nats.publish(subject, bytes);
      } catch (err) {
        const Refused = (err as NatsError).code === ErrorCode.MaxPayloadExceeded ? RpcUnsendableError : RpcError;
        fail(new Refused(`${what} could not be published to ${subject}: ${(err as Error).message}`, { cause: err }));
      }
    }
  };

  #dispatchReply(err: NatsError | null, msg: Msg): void {
    if (err !== null) {
      this.#logger.error(`reply subscription failed: ${err.message}`);
      return;
    }
    const requestId = msg.subject.slice(this.#replyPrefix.length);
    const pending = this.#pending.get(requestId);
    if (pending === undefined) {
      if (this.#logger.isDebugEnabled())
        this.#logger.debug(`ignoring reply on ${msg.subject}: no request is waiting for it`);
      return;
    }
    pending.onMessage(msg);
  }

  /** Decodes a reply (hash verified) to request `id`; undefined (logged) when it is unusable. */
  #decodeReply(msg: Msg, id: string, what: string): DecodedReply | undefined {
    let reply: DecodedReply;
    try {
      reply = this.#codec.decodeReply(msg.data);
    } catch (err) {
      this.#budget.warn('undecodable-reply', `ignoring undecodable reply to ${what}: ${(err as Error).message}`, {
        requestId: id,
      });
      return undefined;
    }
    if (reply.requestId !== id) {
      const from = shownIdentity(reply.sender);
      const why = `it is for request ${shownIdentity(reply.requestId)}`;
      this.#budget.warn('stray-reply', `ignoring reply from ${from} to ${what}: ${why}`, { requestId: id });
      return undefined;
    }
    return reply;
  }

  /**
   * Discovery only needs the sender: the verified reply envelope's sender when the reply decodes,
   * otherwise the transport header, as go-choria does (the body need not be JSON); one that fails
   * the identity rule is refused here.
   */
  #discoverySender(msg: Msg, id: string): NodeIdentity | undefined {
    let transport: DecodedTransport;
    try {
      transport = this.#codec.decodeTransport(msg.data);
    } catch (err) {
      if (this.#logger.isDebugEnabled())
        this.#logger.debug(`ignoring undecodable discovery reply: ${(err as Error).message}`);
      return undefined;
    }
    let sender = transport.headers.sender ?? '';
    try {
      const reply = this.#codec.decodeReply(transport);
      if (reply.requestId === id && reply.sender !== '') sender = reply.sender;
    } catch {
      // the transport header's sender, as above
    }
    return this.refusals.admit(sender, 'discovery');
  }

  #rpcResult(reply: DecodedReply, identity: string, what: string, responses: number, durationMs: number): RpcReply {
    if (responses !== 1) throw new RpcResponseCountError(responses, identity);
    let body: RpcReplyBody;
    try {
      body = parseRpcReply(reply.body);
    } catch (err) {
      throw new ProtocolError(`invalid reply from ${reply.sender} to ${what}: ${(err as Error).message}`);
    }
    const details: RpcStatusDetails = {
      sender: reply.sender,
      action: body.action,
      statuscode: body.statuscode,
      statusmsg: body.statusmsg,
      data: body.data,
      requestId: reply.requestId,
    };
    if (body.statuscode !== 0) throw rpcStatusError(details);
    return { ...details, durationMs: Math.round(durationMs) };
  }
}

// One request of the client in flight, as the client's reply routing (the mux: request id to
// request) sees it. Each request object owns its timers, its entry in the mux and its abort
// listener, and cancel() is the only cleanup: whatever ends it (a reply, a timeout, an abort, the
// connection closing) settles its promise once and goes through cancel().
import type { Msg } from 'nats';
import type { Logger } from 'winston';
import { afterPendingIo, type IoTimer } from '../util/io-timer.js';
import { formatMs } from '../util/duration.js';
import { errorText } from '../util/values.js';
import { RpcAbortError, RpcReplyLostError, RpcTimeoutError } from './errors.js';
import { shownIdentity, type NodeIdentity } from './identity.js';
import type { LogBudget } from '../util/log-budget.js';
import type { DecodedReply } from './protocol/types.js';

/** What the client's reply routing and its reconnect watch call on a request in flight. */
export interface PendingRequest {
  onMessage(msg: Msg): void;
  onClose(err: Error): void;
  /** the connection came back after this request was sent: its reply may be lost */
  onReconnect?(): void;
  /** directed RPCs only: when the request was published (performance.now()) */
  readonly sentAt?: number;
}

/** The client's reply routing: request id to request. */
export type RequestMux = Map<string, PendingRequest>;

export const LOST_REPLY_TEXT = 'the broker connection was lost while waiting for the reply';

/** The part every request shares: one promise, settled once, and cancel() as the only cleanup. */
abstract class InFlightRequest<T> implements PendingRequest {
  readonly promise: Promise<T>;
  #resolve!: (value: T) => void;
  #reject!: (err: Error) => void;
  #settled = false;
  readonly #cleanups: (() => void)[] = [];

  protected constructor(id: string, mux: RequestMux, signal: AbortSignal | undefined, what: string) {
    this.promise = new Promise<T>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    mux.set(id, this);
    this.#cleanups.push(() => mux.delete(id));
    if (signal !== undefined) {
      const onAbort = (): void =>
        this.fail(new RpcAbortError(`${what} aborted: ${errorText(signal.reason)}`, signal.reason));
      signal.addEventListener('abort', onAbort, { once: true });
      this.#cleanups.push(() => signal.removeEventListener('abort', onAbort));
    }
  }

  get settled(): boolean {
    return this.#settled;
  }

  abstract onMessage(msg: Msg): void;

  onClose(err: Error): void {
    this.fail(err);
  }

  /** Ends the request with `err` (nothing when it has ended already). */
  fail(err: Error): void {
    if (this.#settled) return;
    this.cancel();
    this.#reject(err);
  }

  /** Frees what the request holds: its timers, its mux entry, its abort listener. */
  cancel(): void {
    if (this.#settled) return;
    this.#settled = true;
    for (const cleanup of this.#cleanups.splice(0)) cleanup();
  }

  /** Ends the request with what `value` computes, or with what it throws. */
  protected settleWith(value: () => T): void {
    if (this.#settled) return;
    this.cancel();
    try {
      this.#resolve(value());
    } catch (err) {
      this.#reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  /** Runs `cleanup` when the request is cancelled. */
  protected onCancel(cleanup: () => void): void {
    this.#cleanups.push(cleanup);
  }
}

export interface DiscoveryRequestOptions {
  readonly id: string;
  readonly mux: RequestMux;
  readonly signal?: AbortSignal;
  readonly logger: Logger;
  /** the overall limit */
  readonly timeoutMs: number;
  /** how long to wait for the first reply */
  readonly initialWaitMs: number;
  /** how long after the last reply the discovery ends */
  readonly windowMs: number;
  /** ends once this many nodes were found */
  readonly limit?: number;
  readonly onFound?: (identity: NodeIdentity) => void;
  /** the node a reply comes from, or undefined for a reply to drop */
  readonly sender: (msg: Msg) => NodeIdentity | undefined;
}

/**
 * A broadcast discovery: the identities that answered, de-duplicated, once the replies stop
 * coming for a window, the limit is reached or the overall time is up.
 */
export class DiscoveryRequest extends InFlightRequest<NodeIdentity[]> {
  readonly #o: DiscoveryRequestOptions;
  readonly #found = new Set<NodeIdentity>();
  #lastReplyAt: number | undefined;
  #windowDeadline = 0;
  #windowTimer: NodeJS.Timeout | undefined;

  constructor(o: DiscoveryRequestOptions) {
    super(o.id, o.mux, o.signal, 'discovery');
    this.#o = o;
    const overall = setTimeout(() => this.#finish(), o.timeoutMs);
    this.onCancel(() => {
      clearTimeout(overall);
      clearTimeout(this.#windowTimer);
    });
    this.#armWindow(performance.now() + o.initialWaitMs);
  }

  onMessage(msg: Msg): void {
    const sender = this.#o.sender(msg);
    if (sender === undefined || this.settled) return;
    if (!this.#found.has(sender)) {
      this.#found.add(sender);
      try {
        this.#o.onFound?.(sender);
      } catch (err) {
        return this.fail(err instanceof Error ? err : new Error(String(err)));
      }
    }
    if (this.#o.limit !== undefined && this.#found.size >= this.#o.limit) return this.#finish();
    this.#lastReplyAt = performance.now();
    if (this.#windowDeadline > this.#lastReplyAt + this.#o.windowMs)
      this.#armWindow(this.#lastReplyAt + this.#o.windowMs);
  }

  #finish(): void {
    if (this.settled) return;
    this.#o.logger.debug(`discovery found ${this.#found.size} nodes`, { requestId: this.#o.id });
    this.settleWith(() => [...this.#found]);
  }

  /** One timer for the sliding window, moved only when a reply brings the deadline forward. */
  #armWindow(deadline: number): void {
    clearTimeout(this.#windowTimer);
    this.#windowDeadline = deadline;
    this.#windowTimer = setTimeout(() => this.#onWindow(), Math.max(0, deadline - performance.now()));
  }

  #onWindow(): void {
    if (this.#lastReplyAt === undefined) return this.#finish();
    const due = this.#lastReplyAt + this.#o.windowMs;
    if (performance.now() >= due) return this.#finish();
    this.#armWindow(due);
  }
}

export interface DirectedRequestOptions<T> {
  readonly id: string;
  readonly mux: RequestMux;
  readonly signal?: AbortSignal;
  readonly logger: Logger;
  /** where replies from another sender are written: a stranger can send them as fast as the broker carries them */
  readonly budget: LogBudget;
  /** the node the request is for */
  readonly identity: string;
  /** names the request in messages: `request <agent>#<action> to <identity>` */
  readonly what: string;
  readonly timeoutMs: number;
  /** after a reconnect, how long a late reply is waited for (0: none, the reply counts as lost at once) */
  readonly reconnectGraceMs: number;
  /** the reply in a message, or undefined for one to drop */
  readonly decode: (msg: Msg) => DecodedReply | undefined;
  /** whether a reply from another sender is from a node at all (the identity rule) */
  readonly admitSender: (sender: string) => boolean;
  /** the request's result from its target's reply (throws for a failure the reply carries) */
  readonly result: (reply: DecodedReply, responses: number, durationMs: number) => T;
  /** the request timed out (the client counts timeouts for its silent-path check) */
  readonly timedOut: () => void;
}

/** One directed request: the target's reply, or a typed error for a timeout, an abort or a lost reply. */
export class DirectedRequest<T> extends InFlightRequest<T> {
  readonly #o: DirectedRequestOptions<T>;
  readonly sentAt = performance.now();
  readonly onReconnect?: () => void;
  #responses = 0;
  #timer: IoTimer;

  constructor(o: DirectedRequestOptions<T>) {
    super(o.id, o.mux, o.signal, o.what);
    this.#o = o;
    // a reply that arrived in time while this loop was busy is read before the limit applies
    this.#timer = afterPendingIo(o.timeoutMs, () => this.#onTimeout());
    this.onCancel(() => this.#timer.cancel());
    if (o.reconnectGraceMs > 0) this.onReconnect = () => this.#lateReplyGrace();
  }

  onMessage(msg: Msg): void {
    if (this.settled) return;
    const reply = this.#o.decode(msg);
    if (reply === undefined) return;
    const mine = reply.sender === this.#o.identity;
    // a sender that fails the identity rule is no node: refused, and not counted as a response
    if (!mine && !this.#o.admitSender(reply.sender)) return;
    this.#responses++;
    if (!mine) {
      this.#o.budget.warn(
        'unexpected-reply',
        `unexpected reply from ${shownIdentity(reply.sender)} to ${this.#o.what}`,
        {
          requestId: this.#o.id,
        },
      );
      return;
    }
    this.settleWith(() => this.#o.result(reply, this.#responses, performance.now() - this.sentAt));
  }

  #onTimeout(): void {
    const { what, timeoutMs } = this.#o;
    const others = this.#responses > 0 ? `, received ${this.#responses} responses from other identities` : '';
    this.fail(
      new RpcTimeoutError(`${what} timed out after ${formatMs(timeoutMs)}${others}`, timeoutMs, this.#responses),
    );
    this.#o.timedOut();
  }

  /** The connection came back: the reply may be lost; a late one is waited for the grace only. */
  #lateReplyGrace(): void {
    if (this.settled) return;
    const grace = this.#o.reconnectGraceMs;
    this.#timer.cancel();
    this.#timer = afterPendingIo(grace, () =>
      this.fail(new RpcReplyLostError(`${LOST_REPLY_TEXT} (no late reply within ${formatMs(grace)})`)),
    );
  }
}

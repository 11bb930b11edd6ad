// How this instance's list follows the other provisioners of its site. With active/active, the
// membership decides the share: when the members change, waiting nodes no longer ours go to the
// foreign list (their owner takes them) and foreign nodes now ours are offered. Nodes another
// member finished, or that announced a restart (whoever provisioned them is done), leave the list
// unless this instance is busy with them. Nodes in flight here, or handed to this instance, that a
// change gives to another member are reported to it (a busy notice), so that it leaves them to
// this instance rather than meet its node lock. An idle member takes queued nodes from a busy one
// (work-handover.ts) unless coordination_handover is off.
import type { Logger } from 'winston';
import type { ChoriaClient } from '../choria/client.js';
import type { NodeIdentity } from '../choria/identity.js';
import type { ProvisionerConfig } from '../config/types.js';
import { isWaiting, type ActiveEntry, type ActiveList, type DiscoverySource } from './active-list.js';
import { Membership, type GrantedNode } from './coordination/index.js';
import { WorkHandover, type WorkHandoverOptions } from './work-handover.js';
import type { WorkPolicy } from './work-policy.js';

export interface FleetShareOptions {
  readonly list: ActiveList;
  readonly policy: WorkPolicy;
  readonly logger: Logger;
  /** whether the provisioner is running (a membership change while starting or stopping moves nothing) */
  readonly running: () => boolean;
  /** offers a node taken over (Provisioner.offer) */
  readonly offer: (identity: NodeIdentity, source: DiscoverySource, reportedVersion: string | undefined) => boolean;
  /** the list changed */
  readonly listChanged: () => void;
  /** the membership changed (the coordination metrics) */
  readonly membershipChanged: () => void;
  /** queued nodes were handed over to another member or taken from one (the metric) */
  readonly handedOver: (direction: 'given' | 'taken', n: number) => void;
}

/** What joining the active/active group needs besides the connection. */
export interface JoinOptions {
  readonly config: ProvisionerConfig;
  readonly identity: string;
  /** this process's incarnation (the node history's process names it) */
  readonly incarnation: string;
  readonly version: string;
  /** what this instance reports in each heartbeat */
  readonly report: () => { owned: number; provisioned: number; queued: number };
  /** nothing queued and a worker free: this instance could take queued nodes from a busier member */
  readonly idle: () => boolean;
  /** adds a node a hand-over moved to this instance (Provisioner's path for it) */
  readonly take: WorkHandoverOptions['take'];
}

export class FleetShare {
  readonly #opts: FleetShareOptions;
  #handover: WorkHandover | undefined;

  constructor(opts: FleetShareOptions) {
    this.#opts = opts;
  }

  /** active/active: joins the site's group; from now on the membership decides this instance's share. */
  join(client: ChoriaClient, join: JoinOptions): void {
    const logger = this.#opts.logger;
    const handover = join.config.coordinationHandover;
    const membership = new Membership({
      nc: client.nats,
      group: join.config.coordinationGroup,
      instance: join.identity,
      incarnation: join.incarnation,
      heartbeatMs: join.config.coordinationHeartbeatMs,
      logger,
      version: join.version,
      // without the hand-over, no one is to ask this instance for its queue
      report: handover ? join.report : () => ({ ...join.report(), queued: 0 }),
      onChange: () => this.#rebalance(),
      onDone: (nodes) => this.#othersFinished(nodes),
      onBusy: (from, nodes) => this.#othersBusy(from, nodes),
      ...(handover
        ? {
            onAsk: (from: string, want: number) => this.#handover?.answer(from, want),
            onGrant: (from: string, nodes: readonly GrantedNode[]) => this.#handover?.received(from, nodes),
          }
        : {}),
      onInvalid: (reason) => logger.debug(`Ignoring an invalid active/active message: ${reason}`),
    });
    if (handover) {
      this.#handover = new WorkHandover({
        membership,
        list: this.#opts.list,
        policy: this.#opts.policy,
        logger,
        workers: join.config.workers,
        askTimeoutMs: 2 * join.config.coordinationHeartbeatMs,
        idle: join.idle,
        take: join.take,
        listChanged: this.#opts.listChanged,
        moved: this.#opts.handedOver,
      });
    }
    this.#opts.policy.follow(membership);
    membership.start();
  }

  /** This instance may have run out of queued work: ask a busier member for some (when the hand-over is on). */
  mayBeIdle(): void {
    if (this.#opts.running()) this.#handover?.maybeAsk();
  }

  /** A node another member owns leaves this instance's list (not in flight: the lock covers those). */
  handOver(entry: ActiveEntry): void {
    if (this.#opts.list.remove(entry))
      this.#opts.policy.noteForeign(entry.identity, entry.source, Date.now(), entry.reportedVersion);
    this.#opts.listChanged();
  }

  /**
   * The node announced that it restarts or shuts down: whoever provisioned it (another instance,
   * a Go provisioner) is done with it, so a queued entry or a lock wait would only time out.
   * In-flight and held entries are this instance's own work and stay.
   */
  leftProvisioning(identity: string): void {
    if (this.#forget(identity)) {
      this.#opts.logger.debug(`Dropping ${identity} from the provision list: it announced a restart or shutdown`);
      this.#opts.listChanged();
    }
  }

  /** The member list changed: take what is now ours from the foreign list, hand over what is not. */
  #rebalance(): void {
    const { list, policy } = this.#opts;
    if (policy.ready && this.#opts.running()) {
      const members = policy.membership?.members();
      if (members !== undefined) policy.membersChanged(members);
      for (const e of [...list.entries()]) if (isWaiting(e) && !policy.mayWork(e.identity)) this.handOver(e);
      if (policy.membership !== undefined) this.#reportBusy(policy.membership);
      const mine = policy.takeOwned();
      for (const n of mine) this.#opts.offer(n.identity, n.source, n.reportedVersion);
      if (mine.length > 0)
        this.#opts.logger.info(`Took over ${mine.length} nodes after the active/active membership changed`);
    }
    this.#opts.membershipChanged();
  }

  /**
   * Nodes this instance is working on, or was handed and will work on, that rendezvous hashing
   * over the new member list gives to another member: tell their owners, who know nothing of them
   * (a joiner heard of no grant made before it came).
   */
  #reportBusy(membership: Membership): void {
    const byOwner = new Map<string, NodeIdentity[]>();
    for (const e of this.#opts.list.entries()) {
      const working = e.state === 'provisioning' || (e.state === 'queued' && this.#opts.policy.mayWork(e.identity));
      if (!working) continue;
      const owner = membership.ownerOf(e.identity);
      if (owner === membership.member) continue;
      const nodes = byOwner.get(owner);
      if (nodes === undefined) byOwner.set(owner, [e.identity]);
      else nodes.push(e.identity);
    }
    for (const [owner, nodes] of byOwner) membership.busy(owner, nodes);
  }

  /** A live member is provisioning these nodes of this instance's share: leave them to it until its done notice. */
  #othersBusy(from: string, nodes: readonly string[]): void {
    const { list, policy, logger } = this.#opts;
    if (policy.membership?.members().includes(from) !== true) return;
    const now = Date.now();
    for (const identity of nodes) {
      policy.handedTo(identity, from, now);
      const e = list.get(identity);
      if (e !== undefined && isWaiting(e)) this.handOver(e);
    }
    logger.debug(`Leaving ${nodes.length} node(s) to active/active member ${from}, which is provisioning them`);
  }

  /** Another member finished these: forget them here unless one is in flight. */
  #othersFinished(nodes: readonly string[]): void {
    let changed = false;
    for (const identity of nodes) if (this.#forget(identity)) changed = true;
    if (changed) this.#opts.listChanged();
  }

  #forget(identity: string): boolean {
    this.#opts.policy.forgetHandover(identity);
    const foreign = this.#opts.policy.forgetForeign(identity);
    const e = this.#opts.list.get(identity);
    const waiting = e !== undefined && isWaiting(e) && this.#opts.list.remove(e);
    return foreign || waiting;
  }
}

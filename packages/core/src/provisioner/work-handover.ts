// Active/active: queued nodes move from a busy member to an idle one. Rendezvous hashing splits a
// fleet only roughly (600 nodes among three members fall as, say, 174 / 191 / 235), and members
// differ in speed (helpers, load), so without this the member with the most work sets the end
// while the others idle. Here a member whose queue is empty asks the member whose heartbeat
// reports the longest queue for some of its queued nodes; that member hands over up to half of
// what it has queued of its own share, from the end of its queue (the nodes it would reach
// last), and stops working on them (WorkPolicy). Nodes it was handed itself are not passed on.
// Only queued nodes move: a node being provisioned, held or waiting for a lock stays where it is,
// so two members never work on one node because of a hand-over.
//
// What can go wrong, and what happens then:
// - the grant is lost (a broker outage, a taker that is gone): the taker answers every grant with
//   a receipt, and without one the giver takes its nodes back into its own queue at once. A grant
//   that arrives after all leaves the node with both; the node lock keeps them apart;
// - the taker leaves: the giver takes its handed nodes back at once (WorkPolicy.membersChanged);
// - the giver leaves: the taker keeps what it was given; the node lock keeps it apart from the
//   member that now owns those nodes by rendezvous hashing.
import type { NodeIdentity } from '../choria/identity.js';
import type { Logger } from 'winston';
import type { ActiveEntry, ActiveList, DiscoverySource } from './active-list.js';
import type { GrantedNode, Membership } from './coordination/index.js';
import type { WorkPolicy } from './work-policy.js';

/** A member with fewer queued nodes than this is not asked: handing over one node gains nothing. */
export const MIN_QUEUED_TO_ASK = 2;
/** How many nodes per worker an idle member asks for at most: enough to keep it busy until it asks again. */
export const ASK_PER_WORKER = 4;

/** What the hand-over needs of the membership. */
export type HandoverMembership = Pick<
  Membership,
  'state' | 'ready' | 'member' | 'members' | 'busiest' | 'ask' | 'grant'
>;

export interface WorkHandoverOptions {
  readonly membership: HandoverMembership;
  readonly list: ActiveList;
  readonly policy: WorkPolicy;
  readonly logger: Logger;
  readonly workers: number;
  /** how long an unanswered ask blocks the next one */
  readonly askTimeoutMs: number;
  /** nothing queued and a worker free, running and not paused: this instance could take work */
  readonly idle: () => boolean;
  /** adds a node handed over to this instance (or taken back) to its list and queue; false when it could not */
  readonly take: (
    identity: NodeIdentity,
    source: DiscoverySource,
    reportedVersion: string | undefined,
    how: TakenHow,
  ) => boolean;
  readonly listChanged: () => void;
  /** counts the nodes moved (the metric) */
  readonly moved: (direction: 'given' | 'taken', n: number) => void;
  readonly now?: () => number;
}

/** How a node came to this instance: another member granted it, or a grant of ours was not confirmed. */
export type TakenHow = 'granted' | 'taken-back';

export class WorkHandover {
  readonly #opts: WorkHandoverOptions;
  readonly #now: () => number;
  /** the ask in flight: to whom, since when */
  #asking: { readonly member: string; readonly at: number } | undefined;

  constructor(opts: WorkHandoverOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** Idle with the membership formed: ask the member with the longest queue for some of it. */
  maybeAsk(): void {
    const { membership, workers, askTimeoutMs } = this.#opts;
    if (membership.state !== 'formed' || !membership.ready || !this.#opts.idle()) return;
    const now = this.#now();
    if (this.#asking !== undefined && now - this.#asking.at < askTimeoutMs) return;
    this.#asking = undefined;
    const busiest = membership.busiest();
    if (busiest === undefined || busiest.queued < MIN_QUEUED_TO_ASK) return;
    const want = Math.max(1, Math.min(Math.ceil(busiest.queued / 2), workers * ASK_PER_WORKER));
    if (membership.ask(busiest.member, want)) this.#asking = { member: busiest.member, at: now };
  }

  /** A member asks for up to `want` queued nodes: hand over up to half of ours, from the end of the queue. */
  answer(from: string, want: number): void {
    const { membership, list, policy } = this.#opts;
    if (membership.state !== 'formed' || !membership.members().includes(from) || from === membership.member) return;
    const queued = [...list.entries()].filter((e) => e.state === 'queued' && policy.mayHandOver(e.identity));
    const give = queued.slice(queued.length - Math.min(want, Math.floor(queued.length / 2)));
    const nodes = give.map((e): GrantedNode =>
      e.reportedVersion !== undefined
        ? { identity: e.identity, reportedVersion: e.reportedVersion }
        : { identity: e.identity },
    );
    // sent first, taken off the list after (in the same turn, so no worker starts one meanwhile):
    // a grant that cannot be sent leaves the queue as it was
    if (!membership.grant(from, nodes, (why) => this.#takeBack(from, give, why))) return;
    const now = this.#now();
    for (const e of give) {
      list.remove(e);
      policy.handedTo(e.identity, from, now);
      // kept as a foreign node, so that it comes back at once if the taker leaves
      policy.noteForeign(e.identity, e.source, now, e.reportedVersion);
    }
    this.#opts.moved('given', nodes.length);
    if (nodes.length > 0) {
      this.#opts.logger.info(
        `Handed ${nodes.length} queued nodes over to active/active member ${from}, which asked for ${want}`,
      );
      this.#opts.listChanged();
    }
  }

  /** `to` did not confirm the grant of `given`: those whose hand-over still stands are queued here again. */
  #takeBack(to: string, given: readonly ActiveEntry[], why: string): void {
    let back = 0;
    for (const e of given) {
      if (
        this.#opts.policy.takeBack(e.identity, to) &&
        this.#opts.take(e.identity, e.source, e.reportedVersion, 'taken-back')
      )
        back++;
    }
    this.#opts.logger.warn(
      `Took back ${back} of ${given.length} queued nodes handed over to active/active member ${to}: ${why}`,
    );
    if (back > 0) this.#opts.listChanged();
  }

  /** A member handed nodes over to this instance: they are ours now. */
  received(from: string, nodes: readonly GrantedNode[]): void {
    if (this.#asking?.member === from) this.#asking = undefined;
    const { policy } = this.#opts;
    const now = this.#now();
    let added = 0;
    for (const n of nodes) {
      policy.granted(n.identity, now);
      if (this.#opts.take(n.identity, 'discovery', n.reportedVersion, 'granted')) added++;
    }
    this.#opts.moved('taken', added);
    if (nodes.length > 0)
      this.#opts.logger.info(`Took over ${added} of ${nodes.length} queued nodes from active/active member ${from}`);
    // asked and given nothing: ask again (the same member or another) after the next heartbeats
    else this.#asking = { member: from, at: now };
  }
}

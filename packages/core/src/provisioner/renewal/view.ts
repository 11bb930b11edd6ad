// The renewals of a site as the status shows them: how many nodes are in each renewal state, and
// up to a limit of each kind, read from the node history alone.
import type { NodeRecord } from '../history/record.js';
import { renewalDueAt, renewalState, type PlanSettings, type RenewalState } from './plan.js';

/** One node in the renewal view. */
export interface RenewalEntry {
  readonly identity: string;
  readonly state: RenewalState;
  /** ISO 8601, as every time of the status */
  readonly expiresAt: string;
  /** scheduled and due: when it renews */
  readonly dueAt?: string;
  /** in flight and failed: when `reprovision` was sent, and by which instance */
  readonly sentAt?: string;
  readonly sentBy?: string;
  /** failed: why; not renewable: why not */
  readonly reason?: string;
}

export interface RenewalView {
  /** the renewals stopped, and why; undefined while they run */
  readonly stopped: string | undefined;
  readonly counts: Readonly<Record<Exclude<RenewalState, 'none'>, number>>;
  /** up to `limit` of each: the next renewals (soonest first), those in flight, failed and not renewable */
  readonly next: readonly RenewalEntry[];
  readonly inFlight: readonly RenewalEntry[];
  readonly failed: readonly RenewalEntry[];
  readonly notRenewable: readonly RenewalEntry[];
}

/** The site's renewals as one instance sees them: counts, and up to `limit` nodes of each kind. */
export function renewalView(
  records: Iterable<NodeRecord>,
  now: number,
  s: PlanSettings,
  stopped: string | undefined,
  limit: number,
): RenewalView {
  const counts = { 'not-renewable': 0, scheduled: 0, due: 0, 'in-flight': 0, failed: 0 };
  const lists: Record<'next' | 'inFlight' | 'failed' | 'notRenewable', RenewalEntry[]> = {
    next: [],
    inFlight: [],
    failed: [],
    notRenewable: [],
  };
  const listOf: Record<Exclude<RenewalState, 'none'>, RenewalEntry[]> = {
    due: lists.next,
    scheduled: lists.next,
    'in-flight': lists.inFlight,
    failed: lists.failed,
    'not-renewable': lists.notRenewable,
  };
  for (const r of records) {
    const state = renewalState(r, now, s);
    if (state === 'none') continue;
    counts[state]++;
    const entry: RenewalEntry = {
      identity: r.identity,
      state,
      expiresAt: isoOf(r.credentialsExpireAt ?? 0),
      ...(state === 'scheduled' || state === 'due' ? { dueAt: isoOf(renewalDueAt(r, s) ?? 0) } : {}),
      ...(r.renewalSentAt !== undefined ? { sentAt: isoOf(r.renewalSentAt), sentBy: r.renewalSentBy } : {}),
      ...(state === 'failed'
        ? { reason: r.renewalError }
        : state === 'not-renewable'
          ? { reason: r.notRenewable }
          : {}),
    };
    listOf[state].push(entry);
  }
  lists.next.sort((a, b) => (a.dueAt ?? '').localeCompare(b.dueAt ?? ''));
  const cut = (l: RenewalEntry[]): RenewalEntry[] => l.slice(0, limit);
  return {
    stopped,
    counts,
    next: cut(lists.next),
    inFlight: cut(lists.inFlight),
    failed: cut(lists.failed),
    notRenewable: cut(lists.notRenewable),
  };
}

const isoOf = (ms: number): string => new Date(ms).toISOString();

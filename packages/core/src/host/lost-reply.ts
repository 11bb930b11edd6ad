// What to do when the reply to an action that changes the node was lost (docs/protocol.md, "Lost
// replies"). `restart`, `shutdown`, `release_update` and `configure` are never re-sent blindly: a
// node that accepted `restart` holds its agent mutex and answers nothing more, then leaves
// provisioning mode and stops listening, so a blind retry is at best wasted and a strict fleet
// counts it as an error. Instead the node is observed without a directed request: lifecycle
// events it published, and broadcast discovery with an identity filter (a node still in
// provisioning mode answers it, one that left does not).
import type { ChoriaClient } from '../choria/client.js';
import { sleep } from '../util/backoff.js';
import type { LifecycleWitness, WitnessedType } from './lifecycle-witness.js';
import { NodeProbe } from './node-probe.js';
import type { LostReplyFinding } from './types.js';

/** The node-changing actions and what proves each happened. */
export type ChangingAction = 'configure' | 'restart' | 'shutdown' | 'release_update';

interface ActionRule {
  /** events that prove the action was carried out */
  readonly evidence: readonly WitnessedType[];
  /** the longest a real server takes to act after accepting it */
  readonly actsWithinMs: number;
  /** a node no longer answering discovery has carried it out (it left provisioning mode) */
  readonly goneMeansActed: boolean;
  /**
   * the action works for as long as it needs before it acts, holding the agent's mutex: a node
   * that still answers discovery past `actsWithinMs` may be busy with it rather than idle
   */
  readonly mayRunLong: boolean;
  /**
   * a node that reports running the version it was asked for has acted, events or not: it
   * re-executes into provisioning mode and answers discovery as it did before the action
   */
  readonly versionTells: boolean;
}

const RULES: Readonly<Record<ChangingAction, ActionRule>> = {
  // configure leaves the node in provisioning mode: only its `provisioned` event tells
  configure: {
    evidence: ['provisioned'],
    actsWithinMs: 0,
    goneMeansActed: false,
    mayRunLong: false,
    versionTells: false,
  },
  // `shutdown` is published as soon as restart is accepted; splay 1 gives exactly 2 s
  restart: {
    evidence: ['shutdown'],
    actsWithinMs: 2_000,
    goneMeansActed: true,
    mayRunLong: false,
    versionTells: false,
  },
  // a random delay in [0, 10) s, then `shutdown`
  shutdown: {
    evidence: ['shutdown'],
    actsWithinMs: 10_000,
    goneMeansActed: true,
    mayRunLong: false,
    versionTells: false,
  },
  // The release is downloaded and unpacked first, for as long as that takes: past the agent's
  // 20 s deadline the server sends no reply at all, but still installs it. Then `upgraded`, and
  // a re-execution in provisioning mode after 2 s. A server back that quickly, with its events
  // lost (a broker outage across its restart), is told apart by the version it reports.
  release_update: {
    evidence: ['upgraded', 'shutdown', 'startup'],
    actsWithinMs: 2_000,
    goneMeansActed: true,
    mayRunLong: true,
    versionTells: true,
  },
};

export interface LostReplyTimings {
  /** added to the action's own delay before a node that still answers is taken as not having acted (default 3 s) */
  readonly marginMs?: number;
  /** one identity probe waits this long for the answer (default 2 s) */
  readonly probeTimeoutMs?: number;
  /** pause between probes (default 500 ms) */
  readonly probeIntervalMs?: number;
  /** multiplies the servers' action delays (tests against a sped-up simulated fleet); default 1 */
  readonly actionDelayScale?: number;
  /** after a reconnect, how long a node-changing request waits for a late reply (default 2 s) */
  readonly reconnectGraceMs?: number;
  /**
   * how long a node whose provisioning agent stays busy (a release_update still downloading) is
   * watched before it is taken as not having acted after all (default 15 minutes)
   */
  readonly maxBusyMs?: number;
  /**
   * after a node was found busy, how long before its agent is asked again (default 10 s). Each
   * question waits on the server for the mutex until the action ends, so asking at every probe
   * would pile them up there; discovery and events are still watched at every probe.
   */
  readonly busyRecheckMs?: number;
}

/*
 * What watching the node finds (LostReplyFinding, host/types.ts):
 * - `acted`: the node carried the action out: the step succeeded
 * - `not_acted`: still in provisioning mode and did not act: sending it again is safe
 * - `gone`: configure only, the node answers nothing at all any more
 * - `unsure`: configure only, after a broker reconnect; the node is still in provisioning mode, but
 *   its `provisioned` event may have died with the broker as well as the reply. Sending configure
 *   again could configure it twice; the restart that follows anyway tells (a node that was not
 *   configured refuses it because its configuration still enables provisioning).
 */

export interface ConfirmRequest {
  readonly client: ChoriaClient;
  readonly witness: LifecycleWitness | undefined;
  readonly identity: string;
  readonly action: ChangingAction;
  /** when the lost request was sent (performance.now()) */
  readonly sentAt: number;
  /** the reply was lost to a broker reconnect (rather than never coming) */
  readonly reconnected: boolean;
  readonly signal: AbortSignal;
  readonly timings?: LostReplyTimings;
  /** the provisioning token, for the agent-busy check of actions that may run long */
  readonly token?: string;
  /** told once when the node is found still busy with the action */
  readonly onBusy?: () => void;
  /** release_update: the version the node was asked to install (the version check of versionTells) */
  readonly targetVersion?: string;
  /**
   * told when the node acted and is known to be back in provisioning mode already (it reports the
   * version it was asked for); an event that proves the action says nothing of where the node is now
   */
  readonly onBack?: () => void;
}

export const DEFAULT_RECONNECT_GRACE_MS = 2_000;
/** LostReplyTimings.maxBusyMs */
export const DEFAULT_MAX_BUSY_MS = 15 * 60_000;
/** LostReplyTimings.busyRecheckMs */
export const DEFAULT_BUSY_RECHECK_MS = 10_000;

/**
 * Consecutive unanswered probes that make a node absent: a lost broadcast must not decide. With 2 %
 * of requests lost, two misses in a row happen about once in 300 investigations of ~8 probes.
 */
const MISSES_FOR_ABSENT = 3;

/**
 * Observes the node until it is clear whether it acted. Rejects only when `signal` aborts.
 * A node that answers every probe past the action's delay did not act (release_update: unless its
 * agent is still busy with it, see NodeProbe.agentBusy); one that stops answering did (restart, shutdown,
 * release_update) or vanished (configure: `gone`).
 */
export async function confirmAfterLostReply(req: ConfirmRequest): Promise<LostReplyFinding> {
  const rule = RULES[req.action];
  const t = req.timings ?? {};
  const margin = t.marginMs ?? 3_000;
  const probeTimeout = t.probeTimeoutMs ?? 2_000;
  const interval = t.probeIntervalMs ?? 500;
  const link = req.client.link;
  const probe = new NodeProbe(req.client, req.identity, req.signal);
  const maxBusy = t.maxBusyMs ?? DEFAULT_MAX_BUSY_MS;
  const busyRecheck = t.busyRecheckMs ?? DEFAULT_BUSY_RECHECK_MS;
  const firstProbe = performance.now();
  /** the agent was found busy; it is not asked again before this time (-Infinity: never found busy) */
  let busyUntil = -Infinity;
  let deadline = Math.max(req.sentAt + rule.actsWithinMs * (t.actionDelayScale ?? 1), performance.now()) + margin;
  const proven = (): boolean => req.witness?.sawSince(req.identity, rule.evidence, req.sentAt) ?? false;
  /** An action that may run long, watched for less than maxBusy, whose agent was found busy lately or is now. */
  const stillBusy = async (): Promise<boolean> => {
    if (!rule.mayRunLong || performance.now() - firstProbe >= maxBusy) return false;
    return performance.now() < busyUntil || (await probe.agentBusy(req.token ?? '', probeTimeout));
  };

  let misses = 0;
  for (;;) {
    if (proven()) return 'acted';
    const before = link.state;
    const probeStart = performance.now();
    const present = await probe.present(probeTimeout);
    if (proven()) return 'acted';
    // A probe across a broker outage, or while the servers may still be reconnecting, proves
    // nothing either way: a present node could not answer, and the node may not have acted yet.
    const settled = link.settledSince(before, probeStart);
    if (!settled && !present) {
      misses = 0;
      deadline = Math.max(deadline, link.state.upSince + link.fleetReconnectMs + margin);
      await sleep(interval, req.signal);
      continue;
    }
    if (present) {
      misses = 0;
      // Waiting cannot tell more: its `provisioned` event may be lost with the broker, and the
      // restart that follows either way is what tells (a node not configured refuses it)
      if (req.action === 'configure' && req.reconnected) return 'unsure';
      if (performance.now() >= deadline) {
        // Still busy with it: the action has not finished, and sending it again would queue a
        // second run of it behind the first (a second download and install of the release).
        if (await stillBusy()) {
          if (proven()) return 'acted';
          if (busyUntil === -Infinity) req.onBusy?.();
          if (performance.now() >= busyUntil) busyUntil = performance.now() + busyRecheck;
          await sleep(interval, req.signal);
          continue;
        }
        // Already running the version it was asked for: it acted and came back, its events lost.
        if (
          rule.versionTells &&
          req.targetVersion !== undefined &&
          (await probe.runsVersion(req.targetVersion, probeTimeout))
        ) {
          req.onBack?.();
          return 'acted';
        }
        // Without a reconnect the request itself was lost: nothing ever came back, nor any event.
        return 'not_acted';
      }
    } else if (++misses >= MISSES_FOR_ABSENT) {
      return rule.goneMeansActed ? 'acted' : 'gone';
    }
    await sleep(interval, req.signal);
  }
}

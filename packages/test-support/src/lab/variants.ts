// Every interop row runs as written and once more with its broker restarted in the middle of the
// flow: SIGTERM once the first server has had its helper run (requests of other servers are in
// flight, some servers are configured, most are not), started again 3 s later. Requests published
// while it is down are lost; the servers reconnect on their own schedule. The row's verdict then
// asks the same as before, with the bound counted from the broker's return for this project's
// provisioner; upstream, which finds servers whose requests were lost only at its next discovery
// (a minute on), is given that minute more and measured, not held to our bound.
import { sleep, until } from '../wait.js';
import type { LabBroker } from './broker.js';
import { listSetting } from './env.js';
import type { ProvisionerKind } from './provisioners.js';
import type { LabFleet } from './servers.js';

export type RowVariant = 'plain' | 'broker-restart';

const VARIANTS: readonly RowVariant[] = ['plain', 'broker-restart'];

/** One run of a row: which provisioner, which variant, and how the test's name says it. */
export interface RowCase {
  readonly kind: ProvisionerKind;
  readonly variant: RowVariant;
  /** for the test name: `ours`, `upstream, broker restarted mid-flow` */
  readonly label: string;
  /** for run directories and results: `ours`, `upstream-restart` */
  readonly slug: string;
}

/** The variants to run, from LAB_VARIANTS (comma-separated; default both): the CI short pass runs `plain`. */
export function labVariants(): RowVariant[] {
  return listSetting('LAB_VARIANTS', VARIANTS);
}

/** Every provisioner in every variant, for `it.each`. */
export function rowCases(
  kinds: readonly ProvisionerKind[],
  variants: readonly RowVariant[] = labVariants(),
): RowCase[] {
  return variants.flatMap((variant) =>
    kinds.map((kind) => ({
      kind,
      variant,
      label: variant === 'plain' ? kind : `${kind}, broker restarted mid-flow`,
      slug: variant === 'plain' ? kind : `${kind}-restart`,
    })),
  );
}

/** How long the broker stays down. */
export const RESTART_DOWN_MS = 3_000;
/** What a restarted row may wait beyond its bound: the outage and upstream's next discovery. */
const RESTART_EXTRA_WAIT_MS = 75_000;

export interface RestartReport {
  /** ms from the row's start to the broker's stop, and to its return */
  readonly stoppedAfterMs: number;
  readonly backAfterMs: number;
  /** servers already provisioned when it stopped */
  readonly provisionedBeforeStop: number;
}

export interface MidFlowRestart {
  readonly variant: RowVariant;
  /** how much longer than its bound the row waits for its servers */
  readonly extraWaitMs: number;
  /** resolves once the broker is back (at once, to undefined, for a plain row); rejects when it never restarted */
  done(): Promise<RestartReport | undefined>;
}

/** The first server of the fleets has had its helper run: the flow is under way. */
function helperHasRun(fleets: readonly LabFleet[]): () => boolean {
  return () => fleets.some((f) => f.states().some((s) => s.helperRuns > 0));
}

export interface RestartOptions {
  /** when to stop the broker (default: the first helper run among the fleets) */
  readonly when?: () => boolean;
  /** how long `when` may take to hold, default 180 s */
  readonly waitMs?: number;
  /** the row stopped (killed) the broker itself: only start it again after the outage */
  readonly alreadyStopped?: boolean;
}

/**
 * Restarts `broker` once `when()` holds, for a `broker-restart` case; does nothing for a plain
 * one. Starts watching at once: call it before the flow begins. `since` is the row's start.
 */
export function restartMidFlow(
  c: RowCase,
  broker: LabBroker,
  fleets: readonly LabFleet[],
  since: number,
  opts: RestartOptions = {},
): MidFlowRestart {
  if (c.variant === 'plain') return { variant: c.variant, extraWaitMs: 0, done: () => Promise.resolve(undefined) };
  const when = opts.when ?? helperHasRun(fleets);
  const waitMs = opts.waitMs ?? 180_000;
  const run = (async (): Promise<RestartReport> => {
    await until(`the flow to be under way before restarting ${broker.name}`, when, waitMs, { stepMs: 100 });
    const provisionedBeforeStop = fleets.reduce((sum, f) => sum + f.states().filter((s) => s.provisioned).length, 0);
    const stoppedAfterMs = Date.now() - since;
    if (opts.alreadyStopped !== true) await broker.stop();
    await sleep(RESTART_DOWN_MS);
    await broker.start();
    return { stoppedAfterMs, backAfterMs: Date.now() - since, provisionedBeforeStop };
  })();
  // a rejection is the row's to report when it asks for done(); never an unhandled one meanwhile
  run.catch(() => undefined);
  return { variant: c.variant, extraWaitMs: RESTART_EXTRA_WAIT_MS, done: () => run };
}

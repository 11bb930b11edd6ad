// What every interop row shares: a lab opened and always cleaned up (its run directory kept when
// the row failed), the side-by-side results file, the wait for servers to sit in provisioning
// mode, and the row's verdict as one structured error naming what failed.
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '../wait.js';
import { listSetting } from './env.js';
import { labAvailability, labPaths } from './paths.js';
import { openLab, reportLine, type Lab, type ProvisionedReport } from './lab.js';
import type { LabProvisioner, ProvisionerKind } from './provisioners.js';
import type { LabFleet } from './servers.js';
import { rowCases, type MidFlowRestart, type RowCase } from './variants.js';

/** Opens a lab for one row, runs it, stops everything; keeps the run directory when it threw. */
export async function withLab<T>(row: string, fn: (lab: Lab) => Promise<T>): Promise<T> {
  const lab = await openLab(row.replace(/[^a-z0-9-]+/gi, '-'));
  let failed = true;
  try {
    const out = await fn(lab);
    failed = false;
    return out;
  } finally {
    if (failed) console.log(`interop ${row}: failed, its run directory is kept: ${lab.dir}`);
    await lab.cleanup(failed);
  }
}

/**
 * The provisioners a row runs, from LAB_KINDS (comma-separated; default `ours,upstream`): the
 * short pass in .ci/run runs ours only.
 */
export function labKinds(): ProvisionerKind[] {
  return listSetting('LAB_KINDS', ['ours', 'upstream'] as const);
}

/**
 * What every interop file starts with: whether the lab binaries are there (saying so in one line
 * when they are not), the provisioners its rows run, and every provisioner in every variant.
 */
export function interopSuite(): {
  readonly available: boolean;
  readonly kinds: readonly ProvisionerKind[];
  readonly cases: readonly RowCase[];
} {
  const lab = labAvailability();
  if (!lab.available) console.log(lab.skipLine);
  const kinds = labKinds();
  return { available: lab.available, kinds, cases: rowCases(kinds) };
}

/** A 10-server row gets 30 s, each further server half a second more (or `perServerMs`). */
export function rowBound(servers: number, baseMs = 30_000, perServerMs = 500): number {
  return baseMs + perServerMs * Math.max(0, servers - 10);
}

/** Appends the row's result to <runDir>/results.jsonl (BENCHMARKS.md's side-by-side table) and prints its line. */
export function recordResult(
  row: string,
  kind: string,
  r: ProvisionedReport,
  extra: Record<string, unknown> = {},
  outcome = 'provisioned',
): void {
  console.log(reportLine(row, kind, r, outcome));
  const line = {
    at: new Date().toISOString(),
    row,
    kind,
    servers: r.states.length,
    provisioned: r.states.length - r.pending.length,
    ms: r.ms,
    configuredTwice: r.configuredTwice.length,
    ...extra,
  };
  appendResult(line);
}

/** Appends one row's result to the lab's results.jsonl. */
export function appendResult(line: Readonly<Record<string, unknown>>): void {
  appendFileSync(
    join(labPaths().runDir, 'results.jsonl'),
    `${JSON.stringify({ at: new Date().toISOString(), ...line })}\n`,
  );
}

/**
 * Throws unless every server was provisioned (within `limitMs` when given: a row may wait longer
 * than its limit to record how long it really took) and none was configured twice.
 */
export function assertRow(row: string, kind: string, r: ProvisionedReport, boundMs: number, limitMs?: number): void {
  const problems: string[] = [];
  if (r.pending.length > 0)
    problems.push(
      `${r.pending.length} of ${r.states.length} servers not provisioned within ${boundMs / 1000} s ` +
        `(${r.pending.slice(0, 5).join(', ')}${r.pending.length > 5 ? ', ...' : ''})`,
    );
  else if (limitMs !== undefined && r.ms > limitMs)
    problems.push(
      `the last of ${r.states.length} servers was provisioned after ${(r.ms / 1000).toFixed(1)} s, ` +
        `the limit is ${(limitMs / 1000).toFixed(1)} s`,
    );
  if (r.configuredTwice.length > 0) problems.push(`configured more than once: ${r.configuredTwice.join(', ')}`);
  if (problems.length > 0)
    throw new Error(`interop row ${row} with the ${kind} provisioner failed: ${problems.join('; ')}`);
}

export interface RowVerdict {
  /** as the test says it, e.g. `(a) jwt` */
  readonly name: string;
  /** in results.jsonl, e.g. `a-jwt` (a restarted run adds `-restart`) */
  readonly id: string;
  readonly c: RowCase;
  readonly r: ProvisionedReport;
  /** the row's bound; a restarted run's wait adds the restart's extra */
  readonly boundMs: number;
  readonly restart: MidFlowRestart;
  /** a tighter limit than the bound for a plain run (row e's 10 s) */
  readonly limitMs?: number;
  readonly extra?: Record<string, unknown>;
  readonly outcome?: string;
}

/**
 * A row's verdict in either variant: waits for its mid-flow restart (when it has one) to have
 * happened, records the result and asserts it. For this project's provisioner: every server ends
 * as the row wants, none is configured twice, within the row's `limitMs` and, after a restart,
 * within the row's whole bound again counted from the broker's return. The upstream provisioner
 * is a peer measured beside it, not the project under test: its result is recorded as it is
 * (servers provisioned, configured twice, time), and its row fails only when it provisioned
 * nothing at all, which means the lab could not run it.
 */
export async function settleRow(v: RowVerdict): Promise<void> {
  const restart = await v.restart.done();
  const id = restart === undefined ? v.id : `${v.id}-restart`;
  const name = restart === undefined ? v.name : `${v.name}, broker restarted mid-flow`;
  const afterReturn = restart === undefined ? {} : { ...restart, afterReturnMs: v.r.ms - restart.backAfterMs };
  recordResult(id, v.c.kind, v.r, { ...v.extra, ...afterReturn }, v.outcome);
  const wait = v.boundMs + v.restart.extraWaitMs;
  if (v.c.kind !== 'ours') {
    if (v.r.states.length > 0 && v.r.pending.length === v.r.states.length) {
      throw new Error(
        `interop row ${name}: the ${v.c.kind} provisioner provisioned none of ${v.r.states.length} servers within ` +
          `${wait / 1000} s: the lab could not run it`,
      );
    }
    return;
  }
  assertRow(name, v.c.kind, v.r, wait, restart === undefined ? v.limitMs : restart.backAfterMs + v.boundMs);
}

function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Waits until every server of the fleet subscribed to its provisioning subject (it waits to be provisioned). */
export async function waitWaiting(fleet: LabFleet, timeoutMs = 60_000): Promise<void> {
  const waiting = (): number =>
    fleet.identities.filter((id) =>
      readText(join(fleet.nodeDir(id), 'server.log')).includes(`to provisioning.node.${id}`),
    ).length;
  try {
    await until('every server in provisioning mode', () => waiting() === fleet.identities.length, timeoutMs, {
      stepMs: 250,
    });
  } catch {
    throw new Error(
      `only ${waiting()} of ${fleet.identities.length} servers reached provisioning mode within ${timeoutMs / 1000} s`,
    );
  }
}

export interface SiteHistoryStatus {
  readonly store?: string;
  readonly connection?: string;
  readonly bucket?: string;
  readonly nodes?: number;
}

/**
 * The first site's node history from a provisioner's `/status`, once it holds `atLeast` nodes
 * (or after `timeoutMs`, as it is then). A server can run its new configuration before the
 * provisioner's attempt on it ends (a restart whose reply died with a restarted broker is
 * confirmed by watching the node, ~15 s), and the history records the attempt when it ends.
 */
export async function siteHistory(
  p: LabProvisioner,
  atLeast: number,
  timeoutMs = 30_000,
): Promise<SiteHistoryStatus | undefined> {
  let history: SiteHistoryStatus | undefined;
  const read = async (): Promise<boolean> => {
    const status = (await p.status()) as { sites?: { history?: SiteHistoryStatus }[] };
    history = status.sites?.[0]?.history;
    return (history?.nodes ?? 0) >= atLeast;
  };
  // on a timeout the last reading is returned all the same: the row's assertion shows it
  await until(`the history to hold ${atLeast} nodes`, read, timeoutMs, { stepMs: 500 }).catch(() => undefined);
  return history;
}

/** Waits for `text` in a log (a provisioner's, a broker's). */
export function waitLog(what: string, log: () => string, text: string | RegExp, timeoutMs = 60_000): Promise<number> {
  const found = (): boolean => {
    const l = log();
    return typeof text === 'string' ? l.includes(text) : text.test(l);
  };
  return until(`${what} (${String(text)})`, found, timeoutMs, { stepMs: 200 });
}

// What the demo measured, read from the parts once the wait ended: the fleet's own report (node
// states, violations) and the provisioner's (attempts by outcome, the last errors).
import type { DemoParts } from './parts.js';
import type { RenewalsEnd } from './renewal.js';
import type { DemoResult } from './summary.js';
import type { WaitEnd } from './wait.js';

/** A few distinct errors of the nodes whose last attempt failed: the summary's "why". */
const ERRORS_SHOWN = 5;

export function demoResult(
  parts: DemoParts,
  run: { mode: string; nodes: number },
  end: WaitEnd,
  renewals?: RenewalsEnd,
): DemoResult {
  const { provisioner, fleet } = parts;
  const report = fleet.summary();
  const errors = [
    ...new Set(provisioner.status().hosts.flatMap((h) => (h.lastError !== undefined ? [h.lastError] : []))),
  ].slice(0, ERRORS_SHOWN);
  return {
    mode: run.mode,
    nodes: run.nodes,
    provisioned: report.totals.byState.provisioned,
    nodeStates: report.totals.byState,
    outcomes: provisioner.outcomes(),
    violations: report.totals.violations,
    violationsByKind: report.totals.violationsByKind,
    elapsedMs: (end.doneAt ?? Date.now()) - parts.startedAt,
    helperMs: parts.helperMs,
    errors,
    metricsUrl: parts.metricsUrl,
    statusUrl: parts.statusUrl,
    interruption: end.interruption ?? renewals?.interruption,
    ...(parts.renewal !== undefined
      ? {
          renewals: {
            renewed: renewals?.renewed ?? 0,
            mostOut: renewals?.mostOut ?? 0,
            concurrency: parts.renewal.concurrency,
          },
        }
      : {}),
  };
}

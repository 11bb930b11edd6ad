// The demo's verdict and final table, as pure functions of what the run measured.
import { OUTCOMES, outcomeMeaning } from '@choria-provisioner/core';

/** Attempts whose outcome counts as a failure (the core's outcome table decides which). */
export function failedAttempts(outcomes: Readonly<Record<string, number>>): number {
  return OUTCOMES.filter((o) => outcomeMeaning(o) === 'failure').reduce((n, o) => n + (outcomes[o] ?? 0), 0);
}

export interface DemoResult {
  readonly mode: string;
  readonly nodes: number;
  /** nodes that ended provisioned (restarted out of provisioning mode) */
  readonly provisioned: number;
  /** fleet states of every node at the end, e.g. { provisioned: 498, waiting: 2 } */
  readonly nodeStates: Readonly<Record<string, number>>;
  /** provisioning attempts by outcome (the provisioner's outcome counter) */
  readonly outcomes: Readonly<Record<string, number>>;
  readonly violations: number;
  readonly violationsByKind: Readonly<Record<string, number>>;
  /** from the first node booting to the last one provisioned (or the end of the run) */
  readonly elapsedMs: number;
  /** helper time per request, milliseconds */
  readonly helperMs: readonly number[];
  /** a few distinct last errors of nodes that failed, for the "why" */
  readonly errors: readonly string[];
  readonly metricsUrl: string | undefined;
  readonly statusUrl: string | undefined;
  /** why the run ended before every node was provisioned (or renewed): a signal, the deadline, the renewals stopped */
  readonly interruption?: string | undefined;
  /** --renew: nodes renewed once, the most back in provisioning mode at once, and the limit */
  readonly renewals?: { readonly renewed: number; readonly mostOut: number; readonly concurrency: number };
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; undefined when there are none. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

export function nodesPerMinute(nodes: number, elapsedMs: number): number {
  return elapsedMs > 0 ? (nodes * 60_000) / elapsedMs : 0;
}

function formatMs(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)} s`;
  return ms >= 10 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`;
}

function formatCounts(counts: Readonly<Record<string, number>>): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k} ${n}`);
  return parts.length > 0 ? parts.join(', ') : 'none';
}

/** Success means every node provisioned and the simulated fleet saw nothing a real fleet would refuse. */
export function verdict(r: DemoResult): { ok: boolean; reasons: string[] } {
  const reasons: string[] = [];
  if (r.interruption !== undefined) reasons.push(r.interruption);
  if (r.provisioned < r.nodes) {
    const others = Object.fromEntries(Object.entries(r.nodeStates).filter(([state]) => state !== 'provisioned'));
    reasons.push(`${r.nodes - r.provisioned} of ${r.nodes} nodes were not provisioned (${formatCounts(others)})`);
  }
  if (r.renewals !== undefined && r.renewals.renewed < r.nodes)
    reasons.push(`${r.nodes - r.renewals.renewed} of ${r.nodes} nodes were not renewed`);
  if (r.violations > 0)
    reasons.push(
      `the simulated servers recorded ${r.violations} protocol violation(s): ${formatCounts(r.violationsByKind)}`,
    );
  return { ok: reasons.length === 0, reasons };
}

/** The final table plus the result line(s). */
export function formatSummary(r: DemoResult): string {
  const p50 = percentile(r.helperMs, 50);
  const p99 = percentile(r.helperMs, 99);
  const failed = failedAttempts(r.outcomes);
  const rows: [string, string][] = [
    ['mode', r.mode],
    ['nodes', String(r.nodes)],
    ['provisioned', String(r.provisioned)],
    ['failed attempts', `${failed}${failed > 0 ? ' (retried)' : ''}`],
    ['deferred attempts', String(r.outcomes['deferred'] ?? 0)],
    ...(r.renewals !== undefined
      ? [
          [
            'renewed',
            `${r.renewals.renewed} (at most ${r.renewals.mostOut} in provisioning at once, limit ` +
              `${r.renewals.concurrency})`,
          ] as [string, string],
        ]
      : []),
    ['violations', r.violations === 0 ? '0' : `${r.violations}: ${formatCounts(r.violationsByKind)}`],
    ['elapsed', `${(r.elapsedMs / 1000).toFixed(1)} s`],
    ['nodes/minute', nodesPerMinute(r.provisioned, r.elapsedMs).toFixed(0)],
    [
      'helper p50 / p99',
      p50 !== undefined && p99 !== undefined
        ? `${formatMs(p50)} / ${formatMs(p99)} (${r.helperMs.length} runs)`
        : 'n/a',
    ],
  ];
  if (r.metricsUrl !== undefined) rows.push(['metrics', `${r.metricsUrl} (stopped with the demo)`]);
  if (r.statusUrl !== undefined) rows.push(['status', `${r.statusUrl} (stopped with the demo)`]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = ['', 'Demo summary', ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`), ''];
  const v = verdict(r);
  if (v.ok) {
    const renewed = r.renewals !== undefined ? ' and renewed' : '';
    lines.push(`OK: all ${r.nodes} nodes provisioned${renewed}, no protocol violations.`);
  } else {
    lines.push('FAILED:');
    for (const reason of v.reasons) lines.push(`  - ${reason}`);
    if (r.errors.length > 0) {
      lines.push('Last errors seen by the provisioner:');
      for (const e of r.errors) lines.push(`  - ${e}`);
    }
  }
  return lines.join('\n');
}

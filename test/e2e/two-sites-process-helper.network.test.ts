// Two sites in one process with the one-process-per-node helper, started together (issue 24):
// each Provisioner has its own broker, fleet and helper spawner, and both send their first burst
// of helper runs at once. Runs that had answered within their limit were reported as timed out in
// batches: the spawner was late with its reports, and this process read them late when its event
// loop was busy (timers run before the channel is read). Every node must be provisioned with no
// helper error, also when this process's event loop stalls for longer than the limit mid-burst.
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Provisioner } from '../../packages/core/src/index.js';
import { FleetHarness, expectExactlyOnce, metricValue } from '@choria-provisioner/test-support/fleet';
import { blockEventLoopFromCheckPhase } from '@choria-provisioner/test-support/event-loop';
import { descendants } from '@choria-provisioner/test-support/processes';
import { repoRoot } from '@choria-provisioner/test-support/vectors';
import { until } from '@choria-provisioner/test-support/wait';

const h = new FleetHarness();
afterEach(() => h.cleanup());

const HELPER = join(repoRoot, 'examples', 'helpers', 'plain-helper.sh');
/**
 * A few milliseconds per run, but 100 start at once beside the rest of the test suite on two
 * cores: the limit leaves room for a loaded machine without making the stall past it long.
 */
const LIMIT_MS = 3000;
/** Small fleets for CI (the first burst is still 2 x 50 helpers at once), several rounds. */
const ROUNDS = 3;
const SITES = [
  { site: 'lon', nodes: 60 },
  { site: 'nyc', nodes: 40 },
] as const;

/** The last errors of a few failed nodes, to tell a timeout from any other helper failure. */
function lastErrors(p: Provisioner): string {
  const page = p.nodes({ sort: 'identity', order: 'asc', offset: 0, limit: 500 });
  const failed = page.nodes.flatMap((n) => (n.lastError === undefined ? [] : [`${n.identity}: ${n.lastError}`]));
  return failed.slice(0, 3).join('; ');
}

describe('two sites with the process helper', () => {
  it(`provisions every node of both sites with no helper timeout, ${ROUNDS} rounds`, async () => {
    for (let round = 1; round <= ROUNDS; round++) {
      const setups = await Promise.all(
        SITES.map(async ({ site, nodes }) => {
          const s = await h.broker();
          const fleet = await h.fleet(s.url, { count: nodes, name: `${site}-${round}` });
          await fleet.waitForBooted(20_000);
          const registry = new Registry();
          const yaml = `site: ${site}\nworkers: 50\nhelper: ${HELPER}\nhelper_timeout: ${LIMIT_MS / 1000}s\n`;
          const p = h.provisioner(s.url, yaml, { registry, helper: undefined });
          return { site, fleet, registry, p };
        }),
      );
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      await Promise.all(setups.map(({ p }) => p.start()));
      // once the first helper answered, the others of the burst are running: stall past their limit
      const sum = async (metric: string): Promise<number> =>
        (await Promise.all(setups.map(({ site, registry }) => metricValue(registry, metric, { site })))).reduce(
          (a, n) => a + n,
          0,
        );
      await until('the first helper run', async () => (await sum('choria_provisioner_helper_time_count')) > 0, 20_000, {
        stepMs: 5,
      });
      // as a provisioner busy with both sites' work: nothing is read from the spawners meanwhile
      await blockEventLoopFromCheckPhase(LIMIT_MS * 1.5);
      // a failed node waits for the next discovery (minutes away): stop at the first helper error
      const finished = (): boolean =>
        setups.every(({ fleet }) => fleet.countByState().provisioned === fleet.identities().length);
      await until(
        'every node provisioned or a helper error',
        async () => finished() || (await sum('choria_provisioner_helper_errors')) > 0,
        30_000,
      );
      delay.disable();
      const context = `round ${round}, event-loop delay max ${Math.round(delay.max / 1e6)} ms`;
      for (const { site, fleet, registry, p } of setups) {
        expect(
          await metricValue(registry, 'choria_provisioner_helper_errors', { site }),
          `${site}: helper errors, ${context}: ${lastErrors(p)}`,
        ).toBe(0);
        expect(
          await metricValue(registry, 'choria_provisioner_outcomes', { site, outcome: 'failed' }),
          `${site}: failed nodes, ${context}`,
        ).toBe(0);
        expectExactlyOnce(fleet);
        expect(
          await metricValue(registry, 'choria_provisioner_helper_time_count', { site }),
          `${site}: helper runs, ${context}`,
        ).toBe(fleet.identities().length);
      }
      await h.cleanup();
      // the helpers are the spawners' children: none may outlive the provisioners
      expect(descendants(process.pid).filter((d) => d.cmdline.includes('plain-helper.sh'))).toEqual([]);
    }
  }, 90_000);
});

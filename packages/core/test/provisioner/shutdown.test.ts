// The order a site stops in, as seen by the leader election: a leader's term must outlast the
// attempts its workers are finishing; a standby must stop campaigning before anything else.
import { describe, expect, it } from 'vitest';
import { stopParts, type SiteParts } from '../../src/provisioner/shutdown.js';
import type { LeaderElection } from '../../src/provisioner/election/index.js';
import type { HistorySync } from '../../src/provisioner/history/index.js';
import { silentLogger } from '../../src/util/logger.js';

/** Records the order of the steps stopParts takes; the workers end when `finishWork` is called. */
function recordedSite(leader: boolean): { parts: SiteParts; steps: string[]; finishWork: () => void } {
  const steps: string[] = [];
  let finishWork = (): void => undefined;
  const worker = new Promise<void>((resolve) => {
    finishWork = () => {
      steps.push('workers done');
      resolve();
    };
  });
  const election = {
    get isLeader() {
      return leader;
    },
    stop: async () => {
      steps.push('election stopped');
      return leader;
    },
  } as unknown as LeaderElection;
  const historySync = { stop: async () => undefined } as unknown as HistorySync;
  const parts: SiteParts = {
    site: 'test',
    logger: silentLogger(),
    election,
    membership: undefined,
    abortWork: () => {
      steps.push('work aborted');
      // an attempt in its commit grace finishes its restart a moment after the abort
      setTimeout(finishWork, 50);
    },
    workers: () => [worker],
    workersTimeoutMs: 5_000,
    runner: undefined,
    historySync,
    helper: undefined,
    client: undefined,
  };
  return { parts, steps, finishWork };
}

describe('stopParts', () => {
  it('a leader keeps its term until the workers finished what they had begun', async () => {
    const site = recordedSite(true);
    await stopParts(site.parts);
    expect(site.steps).toEqual(['work aborted', 'workers done', 'election stopped']);
  });

  it('a standby stops campaigning before the work is aborted, so it cannot win while stopping', async () => {
    const site = recordedSite(false);
    await stopParts(site.parts);
    expect(site.steps).toEqual(['election stopped', 'work aborted', 'workers done']);
  });
});

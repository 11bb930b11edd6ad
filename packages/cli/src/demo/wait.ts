// The demo's wait: until every simulated node is provisioned, a signal comes or the deadline
// passes, with a progress line meanwhile. The configured discovery interval is the minimum of one
// minute and startup events find the nodes long before that; a node whose attempt failed would
// only come back at the next discovery, so the wait asks for one itself when the provisioner is
// idle and nodes still wait.
import type { Watchdog } from '@choria-provisioner/simulator';
import type { CliIO } from '../io.js';
import type { Interruption } from './interruption.js';
import type { DemoParts } from './parts.js';
import { ProgressReporter, type ProgressSnapshot, type TerminalSink } from './progress.js';
import { failedAttempts } from './summary.js';

const IDLE_DISCOVERY_MS = 5_000;
const WAIT_TICK_MS = 100;

export interface DemoWait {
  readonly mode: string;
  readonly nodes: number;
  readonly deadlineMs: number;
  readonly interruption: Interruption;
  readonly watchdog: Watchdog | undefined;
  readonly terminal: TerminalSink | undefined;
  readonly io: CliIO;
}

/** How the wait ended: when the last node was provisioned, or why the wait gave up. */
export interface WaitEnd {
  readonly doneAt: number | undefined;
  readonly interruption: string | undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitForFleet(parts: DemoParts, w: DemoWait): Promise<WaitEnd> {
  const { provisioner, fleet, startedAt } = parts;
  let doneAt: number | undefined;
  const sample = (): ProgressSnapshot => {
    const c = provisioner.status({ limit: 0 }).hostCounts;
    const n = (k: string): number => c[k] ?? 0;
    return {
      nodes: w.nodes,
      found: Object.values(c).reduce((a, b) => a + b, 0),
      queued: n('queued'),
      provisioning: n('provisioning'),
      done: fleet.countByState().provisioned,
      // the nodes whose last attempt failed or was deferred wait for a retry
      failed: failedAttempts(c) + n('deferred'),
      elapsedMs: (doneAt ?? Date.now()) - startedAt,
    };
  };
  const progress = new ProgressReporter({ sample, terminal: w.terminal, line: (t) => w.io.out(t) });
  progress.start();
  try {
    let lastDiscovery = Date.now();
    for (;;) {
      const provisioned = fleet.countByState().provisioned;
      w.watchdog?.doing(`provisioning in ${w.mode} mode: ${provisioned} of ${w.nodes} nodes provisioned`);
      if (provisioned >= w.nodes) {
        doneAt = Date.now();
        return { doneAt, interruption: undefined };
      }
      if (w.interruption.happened)
        return { doneAt, interruption: `${w.interruption.reason} before every node was provisioned` };
      if (Date.now() - startedAt > w.deadlineMs)
        return {
          doneAt,
          interruption:
            `the deadline of ${(w.deadlineMs / 1000).toFixed(0)} s passed ` + 'before every node was provisioned',
        };
      const st = provisioner.status({ limit: 0 });
      if (
        st.queue === 0 &&
        st.busyWorkers === 0 &&
        fleet.countByState().waiting > 0 &&
        Date.now() - lastDiscovery > IDLE_DISCOVERY_MS
      ) {
        lastDiscovery = Date.now();
        void provisioner.discover();
      }
      await sleep(WAIT_TICK_MS);
    }
  } finally {
    progress.stop();
  }
}

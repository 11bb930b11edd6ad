// `choria-provisioner demo`: the whole job on an embedded default. It starts the stack (a private
// nats-server, a provisioner with an example helper, a simulated fleet: parts.ts), waits for the
// fleet with progress meanwhile (wait.ts), with --renew then until every node's credentials were
// renewed (renewal.ts), reads what happened from the fleet and the provisioner (result.ts), stops
// everything again and prints the summary.
import { ConfigError, createLogger, silentLogger } from '@choria-provisioner/core';
import { DEFAULT_WATCHDOG_S, startWatchdog } from '@choria-provisioner/simulator';
import { EXIT, type CliIO } from '../io.js';
import { Interruption } from './interruption.js';
import { NATS_INSTALL_HINT, findNatsServer } from './nats.js';
import { startDemoParts } from './parts.js';
import { waitForRenewals } from './renewal.js';
import { demoResult } from './result.js';
import { defaultDeadlineMs, defaultWorkers, type DemoSettings } from './settings.js';
import { DemoStack } from './stack.js';
import { formatSummary, verdict } from './summary.js';
import { waitForFleet } from './wait.js';

/** The run ended but not every node was provisioned cleanly (the summary says why). */
export const EXIT_NOT_PROVISIONED = 1;

/** --renew: the renewals end within the credentials' validity after the last node was provisioned */
const RENEWALS_DEADLINE_MS = 60_000;

/** Runs the demo; resolves to the exit code (0 only when every node was provisioned without violations). */
export async function runDemo(settings: DemoSettings, io: CliIO): Promise<number> {
  const nats = findNatsServer(settings.env ?? process.env);
  if (!nats.found) {
    io.err(`choria-provisioner demo: ${nats.reason}\n${NATS_INSTALL_HINT}`);
    return EXIT.runtime;
  }

  const stack = new DemoStack(io);
  const watchdogS = settings.watchdogS ?? DEFAULT_WATCHDOG_S;
  const watchdog =
    watchdogS > 0 ? startWatchdog({ name: 'choria-provisioner demo', limitMs: watchdogS * 1000 }) : undefined;
  if (watchdog !== undefined) stack.defer('the watchdog', () => watchdog.stop());
  watchdog?.doing(`starting the demo (${settings.mode}, ${settings.nodes} nodes)`);
  const interruption = new Interruption(stack, settings.handleSignals ?? true);

  const workers = settings.workers ?? defaultWorkers();
  const logger = settings.debug ? createLogger({ debug: true, logfile: 'stderr', site: 'demo' }) : silentLogger();
  try {
    io.out(`choria-provisioner demo: mode ${settings.mode}, ${settings.nodes} simulated servers, ${workers} workers`);
    const parts = await startDemoParts({ settings, natsBin: nats.bin, workers, logger, io, stack, interruption });
    const deadlineMs = settings.deadlineMs ?? defaultDeadlineMs(settings.nodes);
    const end = await waitForFleet(parts, {
      mode: settings.mode,
      nodes: settings.nodes,
      deadlineMs,
      interruption,
      watchdog,
      terminal: settings.terminal,
      io,
    });
    const renewals =
      parts.renewal !== undefined && end.interruption === undefined
        ? await waitForRenewals({
            provisioner: parts.provisioner,
            fleet: parts.fleet,
            nodes: settings.nodes,
            deadline: Date.now() + RENEWALS_DEADLINE_MS + 100 * settings.nodes,
            interrupted: () => (interruption.happened ? interruption.reason : undefined),
            doing: (what) => watchdog?.doing(what),
            line: (text) => io.out(text),
          })
        : undefined;
    watchdog?.doing('stopping the demo');
    const result = demoResult(parts, settings, end, renewals);
    await stack.stop();
    io.out(formatSummary(result));
    return verdict(result).ok ? EXIT.ok : EXIT_NOT_PROVISIONED;
  } catch (err) {
    if (err instanceof ConfigError) {
      io.err('choria-provisioner demo: the generated configuration was refused:');
      for (const r of err.reasons) io.err(`  - ${r}`);
    } else if (interruption.happened) {
      io.err(`choria-provisioner demo: ${interruption.reason} while starting`);
    } else {
      io.err(`choria-provisioner demo: ${err instanceof Error ? err.message : String(err)}`);
    }
    await stack.stop();
    return interruption.happened ? EXIT_NOT_PROVISIONED : EXIT.runtime;
  }
}

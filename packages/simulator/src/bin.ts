#!/usr/bin/env node
// choria-simulator: runs a SimulatedFleet until SIGINT/SIGTERM or a stop request on
// choria.simulator.<name>.stop; prints one JSON line when ready and one with the summary at the end.
import { fleetOptionsFromArgs } from './bin-options.js';
import { parseSimulatorArgs, USAGE } from './cli-args.js';
import { controlSubjects } from './control.js';
import { SimulatedFleet } from './fleet.js';
import { startWatchdog } from './watchdog.js';

async function main(): Promise<number> {
  const args = parseSimulatorArgs(process.argv.slice(2));
  if (args.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { options, publicFile, keysDir } = fleetOptionsFromArgs(args);
  const watchdog =
    args.watchdogS > 0 ? startWatchdog({ name: 'choria-simulator', limitMs: args.watchdogS * 1000 }) : undefined;
  watchdog?.doing(`starting ${options.count} nodes`);
  const fleet = await SimulatedFleet.start(options);
  watchdog?.doing(`serving ${options.count} nodes as ${fleet.name}`);
  let finishing = false;
  const finish = async (): Promise<void> => {
    if (finishing) return;
    finishing = true;
    const summary = fleet.summary();
    await fleet.stop();
    process.stdout.write(`${JSON.stringify({ summary })}\n`);
  };
  // SIGHUP too: what closing the terminal it runs in sends
  for (const sig of ['SIGHUP', 'SIGINT', 'SIGTERM'] as const)
    process.on(sig, () => void finish().then(() => process.exit(0)));
  // the ready line last: whoever reads it may signal at once, and a signal before the handlers
  // above were in place would kill the process without its summary
  const ready: Record<string, unknown> = {
    ready: true,
    nodes: options.count,
    name: fleet.name,
    protocol: options.protocol,
    seed: fleet.seed,
    control: controlSubjects(fleet.name),
  };
  if (publicFile !== undefined) ready['jwtVerifyCert'] = publicFile;
  if (keysDir !== undefined) ready['keysDir'] = keysDir;
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  await fleet.stopped;
  await finish();
  return 0;
}

// The fleet starts no processes; an uncaught error still ends the process with a clear message.
process.on('uncaughtException', (e) => {
  process.stderr.write(`choria-simulator: unexpected error, stopping: ${e.stack ?? e.message}\n`);
  process.exit(1);
});

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`choria-simulator: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);

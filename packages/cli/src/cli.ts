// The choria-provisioner command line: a thin layer over the core library's public API.
import yargs from 'yargs';
import { VERSION } from '@choria-provisioner/core';
import { EXIT, processIO, type CliIO } from './io.js';
import { runCommand } from './commands/run.js';
import { validateCommand } from './commands/validate.js';
import { statusCommand } from './commands/status.js';
import type { ProcessGuard } from './process-guard.js';
// the demo (and the simulator behind it) is loaded only for `demo`: `run` starts faster without it
import { DEFAULT_WATCHDOG_S } from '@choria-provisioner/simulator/watchdog';

class UsageError extends Error {}

/** `guard`: the process's last resorts after an uncaught error (bin.ts installs one). */
export async function main(argv: string[], io: CliIO = processIO, guard?: ProcessGuard): Promise<number> {
  let code: number = EXIT.ok;
  const parser = yargs(argv)
    .scriptName('choria-provisioner')
    .usage('$0 [run] --config FILE [--config FILE ...] [--choria-config FILE] [--pid FILE] [--debug]')
    .option('debug', { type: 'boolean', default: false, describe: 'Force debug logging', global: true })
    .command(
      ['run', '$0'],
      'Run the provisioner: one instance (site) per --config file, all in this process',
      (y) =>
        y
          .option('config', { type: 'string', array: true, demandOption: true, describe: 'Provisioner YAML file; repeat for several sites' })
          .option('choria-config', { type: 'string', describe: 'Choria client config (default: the usual Choria client lookup); a config file\'s choria_config key wins' })
          .option('pid', { type: 'string', describe: 'Write the process id to this file; removed on clean exit' })
          .option('monitor-address', { type: 'string', default: '0.0.0.0', describe: 'Address the metrics/status endpoint listens on' }),
      async (args) => {
        code = await runCommand(
          {
            configs: args.config,
            choriaConfig: args['choria-config'],
            pidFile: args.pid,
            debug: args.debug,
            monitorAddress: args['monitor-address'],
            ...(guard !== undefined ? { guard } : {}),
          },
          io,
        );
      },
    )
    .command(
      'validate',
      'Load and check configuration files, the helper and key material, print what was found',
      (y) =>
        y
          .option('config', { type: 'string', array: true, demandOption: true, describe: 'Provisioner YAML file(s) to check' })
          .option('choria-config', { type: 'string', describe: 'Choria client config to check' }),
      async (args) => {
        code = await validateCommand({ configs: args.config, choriaConfig: args['choria-config'] }, io);
      },
    )
    .command(
      'status',
      'Show the status of a running provisioner (its /status endpoint)',
      (y) =>
        y
          .option('url', { type: 'string', default: 'http://127.0.0.1:8080', describe: 'Base URL of the monitor endpoint (monitor_port)' })
          .option('json', { type: 'boolean', default: false, describe: 'Print the raw JSON' }),
      async (args) => {
        code = await statusCommand({ url: args.url, json: args.json }, io);
      },
    )
    .command(
      'demo',
      'Start a local nats-server, a simulated fleet and a provisioner, and provision the fleet',
      (y) =>
        y
          .option('mode', { choices: ['ed25519', 'pki', 'jwt', 'plain'] as const, default: 'ed25519' as const, describe: 'Provisioning flow' })
          .option('nodes', { type: 'number', default: 500, describe: 'Simulated servers' })
          .option('workers', { type: 'number', describe: 'Provisioner workers (default: CPU count x 4)' })
          .option('watchdog', { type: 'number', default: DEFAULT_WATCHDOG_S, describe: 'Stop with a message when the event loop stands still this many seconds (0: off)' }),
      async (args) => {
        const { demoCommand } = await import('./commands/demo.js');
        code = await demoCommand({ mode: args.mode, nodes: args.nodes, workers: args.workers, debug: args.debug, watchdogS: args.watchdog }, io, guard !== undefined ? { guard } : {});
      },
    )
    .strict()
    .version(VERSION)
    .help()
    .alias('h', 'help')
    .exitProcess(false)
    .fail((msg, err) => {
      throw new UsageError(msg ?? err?.message ?? 'invalid usage');
    });

  try {
    await parser.parseAsync();
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(`choria-provisioner: ${err.message}\nRun with --help for usage.`);
      return EXIT.usage;
    }
    throw err;
  }
  return code;
}

// The choria-provisioner command line: a thin layer over the core library's public API.
import yargs, { type Argv } from 'yargs';
import { VERSION } from '@choria-provisioner/core';
import { EXIT, processIO, type CliIO } from './io.js';
import { runCommand } from './commands/run.js';
import { validateCommand } from './commands/validate.js';
import { statusCommand } from './commands/status.js';
import { TOKEN_ENV, controlCommand } from './commands/control.js';
import { helperTestCommand } from './commands/helper-test.js';
import type { ProcessGuard } from './process-guard.js';
// the demo (and the simulator behind it) is loaded only for `demo`: `run` starts faster without it
import { DEFAULT_WATCHDOG_S } from '@choria-provisioner/simulator/watchdog';

class UsageError extends Error {}

/** Where a control command goes and with which token, from the options it shares. */
function controlTarget(args: { url: string; site?: string | undefined; 'token-file'?: string | undefined }): {
  url: string;
  site?: string;
  tokenFile?: string;
} {
  return {
    url: args.url,
    ...(args.site !== undefined ? { site: args.site } : {}),
    ...(args['token-file'] !== undefined ? { tokenFile: args['token-file'] } : {}),
  };
}

/** The options every control command shares. */
function controlOptions<T>(y: Argv<T>) {
  return y
    .option('url', {
      type: 'string',
      default: 'http://127.0.0.1:8080',
      describe: 'Base URL of the monitor endpoint (monitor_port)',
    })
    .option('site', { type: 'string', describe: 'Only this site (default: every site the token belongs to)' })
    .option('token-file', {
      type: 'string',
      describe: `File holding the site's monitor_api_token (default: the ${TOKEN_ENV} environment variable)`,
    });
}

/**
 * `run` is also the default command, and is parsed as such when named: yargs renders the whole help
 * text of a command run by its name, to have it ready should the handler ask for it (ours never
 * do). That is 50-70 ms of a start-up that several instances started at once on a small machine
 * wait for. A request for help or the version keeps the name, so `run --help` is run's help.
 */
export function asDefaultCommand(argv: readonly string[]): string[] {
  if (argv[0] !== 'run' || argv.some((a) => a === '--help' || a === '-h' || a === '--version')) return [...argv];
  return argv.slice(1);
}

/** `guard`: the process's last resorts after an uncaught error (bin.ts installs one). */
export async function main(argv: string[], io: CliIO = processIO, guard?: ProcessGuard): Promise<number> {
  let code: number = EXIT.ok;
  const parser = yargs(asDefaultCommand(argv))
    .scriptName('choria-provisioner')
    .usage('$0 [run] --config FILE [--config FILE ...] [--choria-config FILE] [--pid FILE] [--debug]')
    .option('debug', { type: 'boolean', default: false, describe: 'Force debug logging', global: true })
    .command(
      ['run', '$0'],
      'Run the provisioner: one instance (site) per --config file, all in this process',
      (y) =>
        y
          .option('config', {
            type: 'string',
            array: true,
            demandOption: true,
            describe: 'Provisioner YAML file; repeat for several sites',
          })
          .option('choria-config', {
            type: 'string',
            describe:
              "Choria client config (default: the usual Choria client lookup); a config file's choria_config key wins",
          })
          .option('pid', { type: 'string', describe: 'Write the process id to this file; removed on clean exit' })
          .option('monitor-address', {
            type: 'string',
            default: '0.0.0.0',
            describe: 'Address the metrics/status endpoint listens on',
          })
          .option('dry-run', {
            type: 'boolean',
            default: false,
            describe:
              'Discover, fetch, check and run the helper for every node, but send nothing that changes a node ' +
              '(configure, restart, shutdown, release_update)',
          }),
      async (args) => {
        code = await runCommand(
          {
            configs: args.config,
            choriaConfig: args['choria-config'],
            pidFile: args.pid,
            debug: args.debug,
            monitorAddress: args['monitor-address'],
            dryRun: args['dry-run'],
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
          .option('config', {
            type: 'string',
            array: true,
            demandOption: true,
            describe: 'Provisioner YAML file(s) to check',
          })
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
          .option('url', {
            type: 'string',
            default: 'http://127.0.0.1:8080',
            describe: 'Base URL of the monitor endpoint (monitor_port)',
          })
          .option('json', { type: 'boolean', default: false, describe: 'Print the raw JSON' })
          .option('token-file', {
            type: 'string',
            describe:
              `File holding the site's monitor_api_token, to list the nodes of a site that sets one ` +
              `(default: the ${TOKEN_ENV} environment variable)`,
          }),
      async (args) => {
        code = await statusCommand({ url: args.url, json: args.json, tokenFile: args['token-file'] }, io);
      },
    )
    .command('helper', 'Helper tooling', (y) =>
      y
        .command(
          'test',
          'Run the configured helper for one node exactly as `run` would, changing nothing on the node',
          (t) =>
            t
              .option('config', { type: 'string', demandOption: true, describe: 'Provisioner YAML file' })
              .option('choria-config', { type: 'string', describe: 'Choria client config (as for run)' })
              .option('identity', {
                type: 'string',
                describe: 'Build the request live from this node (every fetch and check, nothing sent that changes it)',
              })
              .option('request', { type: 'string', describe: 'Use a saved request file instead of asking a node' })
              .option('save', { type: 'string', describe: 'Write the request to this file for --request replays' })
              .option('json', { type: 'boolean', default: false, describe: 'Print the report as JSON' }),
          async (args) => {
            code = await helperTestCommand(
              {
                config: args.config,
                choriaConfig: args['choria-config'],
                identity: args.identity,
                request: args.request,
                save: args.save,
                json: args.json,
              },
              io,
            );
          },
        )
        .demandCommand(1, 'helper needs a subcommand: test'),
    )
    .command(
      ['pause', 'resume'],
      'Pause or resume a running provisioner through its monitor port (needs monitor_api_token)',
      (y) => controlOptions(y),
      async (args) => {
        code = await controlCommand(
          { ...controlTarget(args), action: args._[0] === 'resume' ? 'resume' : 'pause' },
          io,
        );
      },
    )
    .command(
      'renewals <action>',
      'Resume the credential renewals of a running provisioner after they stopped (needs monitor_api_token)',
      (y) => controlOptions(y).positional('action', { choices: ['resume'] as const, demandOption: true }),
      async (args) => {
        code = await controlCommand({ ...controlTarget(args), action: 'resume-renewals' }, io);
      },
    )
    .command(
      ['release <identity>', 'retry <identity>'],
      'Release a quarantined node, or retry a node now, in a running provisioner (needs monitor_api_token)',
      (y) => controlOptions(y).positional('identity', { type: 'string', demandOption: true, describe: 'The node' }),
      async (args) => {
        code = await controlCommand(
          {
            ...controlTarget(args),
            action: args._[0] === 'retry' ? 'retry' : 'release',
            identity: String(args.identity),
          },
          io,
        );
      },
    )
    .command(
      'demo',
      'Start a local nats-server, a simulated fleet and a provisioner, and provision the fleet',
      (y) =>
        y
          .option('mode', {
            choices: ['ed25519', 'pki', 'jwt', 'plain'] as const,
            default: 'ed25519' as const,
            describe: 'Provisioning flow',
          })
          .option('nodes', { type: 'number', default: 500, describe: 'Simulated servers' })
          .option('renew', {
            type: 'boolean',
            default: false,
            describe: "Then renew every server's short-lived credentials once (modes ed25519 and pki)",
          })
          .option('workers', { type: 'number', describe: 'Provisioner workers (default: CPU count x 4)' })
          .option('watchdog', {
            type: 'number',
            default: DEFAULT_WATCHDOG_S,
            describe: 'Stop with a message when the event loop stands still this many seconds (0: off)',
          }),
      async (args) => {
        const { demoCommand } = await import('./commands/demo.js');
        code = await demoCommand(
          {
            mode: args.mode,
            nodes: args.nodes,
            renew: args.renew,
            workers: args.workers,
            debug: args.debug,
            watchdogS: args.watchdog,
          },
          io,
          guard !== undefined ? { guard } : {},
        );
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

// `choria-provisioner helper test`: what the configured helper answers for one node, changing
// nothing on the node; prints the request, the reply, the helper's stderr, every warning and what
// the provisioner would have sent. `--save` keeps the request for `--request` replays.
import { readFileSync, writeFileSync } from 'node:fs';
import {
  ConfigError,
  loadProvisionerConfig,
  loadSiteChoria,
  parseSavedRequest,
  testHelper,
  visibleStrings,
  type HelperTestReport,
} from '@choria-provisioner/core';
import { EXIT, type CliIO } from '../io.js';

export interface HelperTestOptions {
  config: string;
  choriaConfig: string | undefined;
  identity: string | undefined;
  request: string | undefined;
  save: string | undefined;
  json: boolean;
}

// What the node sent (its inventory, its replies) and what the helper printed (which may echo it)
// reach the terminal with every control character as a visible escape; line breaks stay. An
// operator runs this to read the whole of it (a certificate, a long fact): nothing is cut.
const pretty = (v: unknown): string => JSON.stringify(visibleStrings(v, 32, Infinity), null, 2);
const shown = (text: string): string =>
  text
    .split('\n')
    .map((line) => visibleStrings(line, 32, Infinity) as string)
    .join('\n');

function describe(r: HelperTestReport): string {
  const lines = [
    'request:',
    r.request === undefined ? '  (none: the attempt stopped before the helper)' : pretty(r.request),
    '',
  ];
  lines.push('reply:', r.reply === undefined ? '  (none)' : pretty(r.reply), '');
  if (r.stdout !== undefined)
    lines.push('stdout (not a valid reply):', r.stdout.trim() === '' ? '  (empty)' : r.stdout.trimEnd(), '');
  lines.push('stderr:', r.stderr.trim() === '' ? '  (empty)' : r.stderr.trimEnd(), '');
  lines.push('warnings:', ...(r.warnings.length === 0 ? ['  (none)'] : r.warnings.map((w) => `  ${w}`)), '');
  lines.push(
    `result: ${r.ok ? 'OK' : 'FAILED'}: ` +
      `${r.outcome}${r.durationMs !== undefined ? ` (helper ${Math.round(r.durationMs)} ms)` : ''}`,
  );
  return shown(lines.join('\n'));
}

export async function helperTestCommand(opts: HelperTestOptions, io: CliIO): Promise<number> {
  if ((opts.identity === undefined) === (opts.request === undefined)) {
    io.err(
      'choria-provisioner: helper test needs --identity (ask the node) or --request FILE (a saved request), not both',
    );
    return EXIT.usage;
  }
  let report: HelperTestReport;
  try {
    const config = loadProvisionerConfig(opts.config);
    if (opts.request !== undefined) {
      const request = parseSavedRequest(readFileSync(opts.request, 'utf8'), opts.request);
      report = await testHelper({ config, identity: request.identity, request });
    } else {
      report = await testHelper({
        config,
        choria: loadSiteChoria(config, { choriaConfig: opts.choriaConfig }),
        identity: opts.identity ?? '',
      });
    }
  } catch (err) {
    io.err(`choria-provisioner: ${err instanceof Error ? err.message : String(err)}`);
    return err instanceof ConfigError ? EXIT.config : EXIT.runtime;
  }
  if (opts.save !== undefined && report.request !== undefined)
    writeFileSync(opts.save, `${JSON.stringify(report.request)}\n`, { mode: 0o600 });
  io.out(opts.json ? pretty(report) : describe(report));
  return report.ok ? EXIT.ok : EXIT.runtime;
}

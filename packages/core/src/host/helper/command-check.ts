// Start-up check that a helper command names an executable program (upstream only finds out per node).
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';
import { errorText } from '../../util/values.js';
import { parseHelperCommand } from './spawn.js';

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Returns a problem description, or undefined when the helper's program exists and is executable. */
export function checkHelperCommand(helper: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  let program: string;
  try {
    [program] = parseHelperCommand(helper);
  } catch (err) {
    return errorText(err); // "cannot parse helper command: ..."
  }
  if (program.includes('/')) {
    if (!isAbsolute(program) && !isExecutableFile(program))
      return `helper ${program} does not exist or is not executable (relative to ${process.cwd()})`;
    if (!isExecutableFile(program)) return `helper ${program} does not exist or is not an executable file`;
    return undefined;
  }
  for (const dir of (env['PATH'] ?? '').split(delimiter)) {
    if (dir !== '' && isExecutableFile(join(dir, program))) return undefined;
  }
  return `helper ${program} was not found on PATH`;
}

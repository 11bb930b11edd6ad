#!/usr/bin/env node
// the bundled CLI after `npm run build` (a plain re-export before it): it starts faster
import { main, processIO, ProcessGuard } from './bundle/cli.js';

const guard = new ProcessGuard();
guard.install(processIO, 'choria-provisioner');
main(process.argv.slice(2), processIO, guard).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`choria-provisioner: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 3;
  },
);

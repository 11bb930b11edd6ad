#!/usr/bin/env node
import { main } from './cli.js';
import { processIO } from './io.js';
import { ProcessGuard } from './process-guard.js';

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

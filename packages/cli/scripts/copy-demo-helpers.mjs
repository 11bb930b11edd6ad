#!/usr/bin/env node
// The demo runs three of the example helpers (examples/helpers/) as real helper processes. They are
// copied into packages/cli/helpers/ at build time, so the published CLI carries them and a
// checkout keeps one copy of each in examples/.
import { copyFileSync, mkdirSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';

export const DEMO_HELPERS = ['pool-helper.mjs', 'ed25519-helper.mjs', 'x509-ca-helper.mjs'];

const from = new URL('../../../examples/helpers/', import.meta.url);
const to = new URL('../helpers/', import.meta.url);
mkdirSync(to, { recursive: true });
for (const name of DEMO_HELPERS) copyFileSync(new URL(name, from), new URL(name, to));
process.stdout.write(`copied ${DEMO_HELPERS.length} demo helpers to ${fileURLToPath(to)}\n`);

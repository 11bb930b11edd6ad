#!/usr/bin/env node
// tsc compiles the TypeScript only: the helper spawner's Python companion
// (src/host/helper/spawner-child.py) is copied beside its compiled Node twin in dist/.
import { copyFileSync, mkdirSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';

const COMPANIONS = ['host/helper/spawner-child.py'];
for (const rel of COMPANIONS) {
  const to = new URL(`../dist/${rel}`, import.meta.url);
  mkdirSync(new URL('.', to), { recursive: true });
  copyFileSync(new URL(`../src/${rel}`, import.meta.url), to);
}
process.stdout.write(
  `copied ${COMPANIONS.length} companion program(s) to ${fileURLToPath(new URL('../dist/', import.meta.url))}\n`,
);

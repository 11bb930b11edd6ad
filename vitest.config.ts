import { defineConfig } from 'vitest/config';
import { fileURLToPath } from 'node:url';

const src = (pkg: string, entry = 'index'): string => fileURLToPath(new URL(`./packages/${pkg}/src/${entry}.ts`, import.meta.url));

// Tests that need a broker (a nats-server, or a command that starts one) are named
// `*.network.test.ts` (test/packaging/test-layout.test.ts keeps it so): `--project unit` runs the
// rest in seconds, `--project network` only those.
const TESTS = ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'];
const NETWORK_TESTS = TESTS.map((glob) => glob.replace(/\.test\.ts$/, '.network.test.ts'));
// The real-Choria interop lab (docs/interop.md): prebuilt go-choria binaries, minutes per file, so
// neither `unit` nor `network` runs it; `npm run test:interop` does, one file at a time (the lab
// starts tens of real servers on a 2-core machine).
const INTEROP_TESTS = ['test/interop/**/*.interop.test.ts'];
// The fault soak against the same lab (`npm run soak:lab`): half an hour by default, on request only.
const SOAK_TESTS = ['test/soak/**/*.soak.test.ts'];

export default defineConfig({
  resolve: {
    // the more specific subpath first: aliases match by prefix
    alias: {
      '@choria-provisioner/core/internal': src('core', 'internal'),
      '@choria-provisioner/core': src('core'),
      '@choria-provisioner/simulator/watchdog': src('simulator', 'watchdog'),
      '@choria-provisioner/simulator': src('simulator'),
      '@choria-provisioner/test-support': fileURLToPath(new URL('./packages/test-support/src', import.meta.url)),
    },
  },
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    projects: [
      { extends: true, test: { name: 'unit', include: TESTS, exclude: [...NETWORK_TESTS, ...INTEROP_TESTS, ...SOAK_TESTS] } },
      { extends: true, test: { name: 'network', include: NETWORK_TESTS, exclude: INTEROP_TESTS } },
      {
        extends: true,
        test: { name: 'interop', include: INTEROP_TESTS, poolOptions: { forks: { singleFork: true } }, testTimeout: 600_000, hookTimeout: 120_000 },
      },
      { extends: true, test: { name: 'soak', include: SOAK_TESTS, poolOptions: { forks: { singleFork: true } }, hookTimeout: 120_000 } },
    ],
  },
});

// What dist/bin.js runs. tsc emits this file as a plain re-export; the build then replaces the
// emitted dist/bundle/cli.js with one bundle of the CLI and its dependencies
// (scripts/bundle.mjs says why), so the two are interchangeable.
export { main } from '../cli.js';
export { processIO } from '../io.js';
export { ProcessGuard } from '../process-guard.js';

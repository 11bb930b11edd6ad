// What dist/bin.js runs. tsc emits this file as a plain re-export; the build then replaces the
// emitted dist/bundle/cli.js with the loader of one bundle of the CLI and its dependencies
// (scripts/bundle.mjs and scripts/bundle-loader.js say why), which exports the same three names.
export { main } from '../cli.js';
export { processIO } from '../io.js';
export { ProcessGuard } from '../process-guard.js';

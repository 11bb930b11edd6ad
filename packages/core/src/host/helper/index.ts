// The site helper: contract types, request encoding, reply validation and the three ways to run
// a helper (a process per request, a pool of JSON-lines processes, an in-process function).
import { FunctionHelper } from './function-helper.js';
import { PoolHelper } from './pool-helper.js';
import { ProcessHelper } from './process-helper.js';
import type { SpawnerSetting } from './spawner.js';
import type { ProvisionerConfig } from '../../config/types.js';
import type { HelperFunction, HelperRunner } from './types.js';

export type {
  HelperCsr,
  HelperEd25519PubKey,
  HelperFunction,
  HelperJwtClaims,
  HelperReply,
  HelperRequest,
  HelperResult,
  HelperRunOptions,
  HelperRunner,
  HelperServerClaims,
  HelperServerPermissions,
} from './types.js';
export { HelperCommandError, HelperError, HelperReplyError, type HelperErrorKind } from './errors.js';
export { encodeHelperRequest } from './request.js';
export { describeValue, parseHelperReply, validateHelperReply } from './reply.js';
export {
  assertAcceptedByNode,
  assertConfigurable,
  RELATIVE_EXP_LIMIT,
  replyWarnings,
  type ReplyWarningOptions,
} from './reply-checks.js';
export { parseHelperCommand } from './spawn.js';
export { SPAWNER_SETTINGS, type SpawnerKind, type SpawnerSetting } from './spawner.js';
export {
  DEFAULT_HELPER_TIMEOUT_MS,
  DEFAULT_MAX_OUTPUT_BYTES,
  DEFAULT_MAX_STDERR_BYTES,
  ProcessHelper,
  type ProcessHelperOptions,
} from './process-helper.js';
export { DEFAULT_POOL_SIZE, PoolHelper, type PoolHelperOptions } from './pool-helper.js';
export { FunctionHelper, type FunctionHelperOptions } from './function-helper.js';

export type HelperRunnerSpec =
  | {
      /** the `helper` setting */
      readonly command: string;
      /** 'process' (default): one process per request, as upstream; 'pool': JSON-lines processes */
      readonly mode?: 'process' | 'pool';
      readonly poolSize?: number;
      /** requests a pool process may have unanswered (default 1) */
      readonly poolDepth?: number;
      /** helper_mode process: what starts the helper processes (default 'node') */
      readonly spawner?: SpawnerSetting;
      readonly timeoutMs?: number;
      readonly cwd?: string;
      readonly env?: NodeJS.ProcessEnv;
    }
  | { readonly fn: HelperFunction; readonly timeoutMs?: number; readonly name?: string };

/**
 * The helper runner a site's configuration describes (`helper`, `helper_mode`, pool size and
 * depth, `helper_timeout`), or `fn` in its place: what `run` and `helper test` both use.
 */
export function helperRunnerFor(config: ProvisionerConfig, fn?: HelperFunction): HelperRunner {
  if (fn !== undefined) return createHelperRunner({ fn, timeoutMs: config.helperTimeoutMs });
  if (config.helperMode === 'pool') {
    return createHelperRunner({
      command: config.helper,
      mode: 'pool',
      poolSize: config.helperPoolSize,
      poolDepth: config.helperPoolDepth,
      timeoutMs: config.helperTimeoutMs,
    });
  }
  return createHelperRunner({
    command: config.helper,
    timeoutMs: config.helperTimeoutMs,
    spawner: config.helperSpawner,
  });
}

/** Builds the runner for a spec; throws HelperCommandError for an unusable command line. */
export function createHelperRunner(spec: HelperRunnerSpec): HelperRunner {
  if ('fn' in spec) return new FunctionHelper(spec.fn, { timeoutMs: spec.timeoutMs, name: spec.name });
  const common = { command: spec.command, timeoutMs: spec.timeoutMs, cwd: spec.cwd, env: spec.env };
  if (spec.mode === 'pool') return new PoolHelper({ ...common, size: spec.poolSize, depth: spec.poolDepth });
  return new ProcessHelper({ ...common, spawner: spec.spawner });
}

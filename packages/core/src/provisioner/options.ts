// What a Provisioner is built from: the site's configuration and Choria settings, and what an
// embedding application or a test may put in place of the defaults (the helper, the runner of
// each attempt).
import type { Logger } from 'winston';
import type { Registry } from 'prom-client';
import type { ChoriaClient } from '../choria/client.js';
import type { ChoriaSettings, ProvisionerConfig } from '../config/types.js';
import { helperRunnerFor, type HelperFunction, type HelperRunner } from '../host/helper/index.js';
import { createHostRunner } from '../host/host.js';
import type { HostMetrics, HostRunner } from '../host/types.js';
import type { PauseFlag } from '../util/pause.js';

/** What the Provisioner hands to `makeHostRunner` once it is connected: all a Host pipeline needs of it. */
export interface HostRunnerContext {
  readonly client: ChoriaClient;
  readonly metrics: HostMetrics;
  readonly pause: PauseFlag;
  readonly helper: HelperRunner;
}

export interface ProvisionerOptions {
  readonly config: ProvisionerConfig;
  /** Choria client settings after the provisioner overrides (applyProvisionerOverrides) */
  readonly choria: ChoriaSettings;
  readonly logger?: Logger;
  /** shared prom-client registry; a private one when absent */
  readonly registry?: Registry;
  /** an in-process helper function or a ready HelperRunner instead of the config's helper command */
  readonly helper?: HelperFunction | HelperRunner;
  /** post-success hold, default 60 s (upstream) */
  readonly holdMs?: number;
  /** work queue capacity, default 50,000 (upstream) */
  readonly queueCapacity?: number;
  /** replaces the Host pipeline (tests, custom flows) */
  readonly hostRunner?: HostRunner;
  /**
   * builds the runner from the provisioner's connection, metrics, pause flag and helper once it
   * is connected (a Host pipeline with other settings, say); `hostRunner` wins when both are given
   */
  readonly makeHostRunner?: (ctx: HostRunnerContext) => HostRunner;
  /** an already connected client (embedding, tests); not closed by stop() */
  readonly client?: ChoriaClient;
  /**
   * renewals: an already connected client on the fleet's own collective, instead of one connected
   * with `renewal_choria_config`; not closed by stop()
   */
  readonly renewalClient?: ChoriaClient;
  /** maximum random wait before the first election campaign, default 5 s (upstream) */
  readonly electionSplayMs?: number;
  /** `run --dry-run`: fetch, check and run the helper for every node, change none (HostDeps.dryRun) */
  readonly dryRun?: boolean;
  /** how often an unreachable history bucket (history_store kv) is tried again, default 60 s */
  readonly historyRetryMs?: number;
  /** how long stop() waits for in-flight work, default 10 s */
  readonly stopTimeoutMs?: number;
  readonly version?: string;
}

function isHelperRunner(h: HelperFunction | HelperRunner): h is HelperRunner {
  return typeof h === 'object' && h !== null && 'run' in h && 'close' in h;
}

/** The helper of the site: the one given, or a runner for the given function or the config's helper command. */
export function helperFor(opts: ProvisionerOptions): HelperRunner {
  const h = opts.helper;
  return h !== undefined && isHelperRunner(h) ? h : helperRunnerFor(opts.config, h);
}

/** The runner of every attempt: the one given, one the given factory makes, or the Host pipeline. */
export function hostRunnerFor(opts: ProvisionerOptions, ctx: HostRunnerContext): HostRunner {
  return (
    opts.hostRunner ??
    opts.makeHostRunner?.(ctx) ??
    createHostRunner({ config: opts.config, ...ctx, ...(opts.dryRun === true ? { dryRun: true } : {}) })
  );
}

// `choria-provisioner helper test`: the request the provisioner would give the site's helper for
// one node, built live (every fetch and check of a real attempt, through a dry-run Host, so
// nothing on the node changes) or read from a saved file, run through the configured helper
// exactly as `run` would (same mode, time limit, environment), with the same reply checks. It
// shows what the helper printed as printed: the operator asked for it, and it never reaches the
// log or the monitor port from here.
import type { Logger } from 'winston';
import { ChoriaClient } from '../choria/client.js';
import type { ChoriaSettings, ProvisionerConfig } from '../config/types.js';
import { PauseFlag } from '../util/pause.js';
import { silentLogger } from '../util/logger.js';
import { errorText } from '../util/values.js';
import { HelperError, helperRunnerFor, type HelperFunction } from './helper/index.js';
import { replyWarnings } from './helper/reply-checks.js';
import type { HelperReply, HelperRequest, HelperResult, HelperRunner } from './helper/types.js';
import { Host } from './host.js';
import type { HostMetrics } from './types.js';

/** A one-off test counts nothing. */
const NO_METRICS: HostMetrics = {
  rpcTime: () => undefined,
  rpcError: () => undefined,
  helperTime: () => undefined,
  helperError: () => undefined,
  helperShutdownRequest: () => undefined,
  lostReply: () => undefined,
};

export interface HelperTestInput {
  readonly config: ProvisionerConfig;
  /** needed for a live request (no `request`) */
  readonly choria?: ChoriaSettings;
  readonly identity: string;
  /** a saved request instead of asking the node */
  readonly request?: HelperRequest;
  /** an in-process helper instead of the config's command (embedding) */
  readonly helper?: HelperFunction;
  readonly logger?: Logger;
}

export interface HelperTestReport {
  readonly request: HelperRequest | undefined;
  readonly reply: HelperReply | undefined;
  /**
   * what the helper printed on stdout when it was not a reply (the run failed), unredacted: the
   * operator running the test asked to see it. Undefined when the reply was accepted or the helper
   * did not run.
   */
  readonly stdout?: string;
  /** what the helper printed on stderr, unredacted */
  readonly stderr: string;
  readonly warnings: readonly string[];
  readonly durationMs: number | undefined;
  /** what the attempt came to: the dry run's "would send ..." or the error that stopped it */
  readonly outcome: string;
  readonly ok: boolean;
}

/** Parses a saved request file's text: the helper's stdin as the provisioner writes it. */
export function parseSavedRequest(text: string, source: string): HelperRequest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} is not a saved helper request: ${errorText(err)}`, { cause: err });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(`${source} is not a saved helper request: not a JSON object`);
  const o = value as Record<string, unknown>;
  if (typeof o['identity'] !== 'string' || o['identity'] === '')
    throw new Error(`${source} is not a saved helper request: "identity" must be a non-empty string`);
  if (typeof o['inventory'] !== 'string')
    throw new Error(`${source} is not a saved helper request: "inventory" must be the inventory JSON text`);
  return value as HelperRequest;
}

/** Records what passes through a helper runner, and what a failed helper printed, as printed. */
class RecordingHelper implements HelperRunner {
  request: HelperRequest | undefined;
  result: HelperResult | undefined;
  stdout: string | undefined;
  stderr = '';
  constructor(private readonly inner: HelperRunner) {}
  async run(req: HelperRequest, opts: Parameters<HelperRunner['run']>[1]): Promise<HelperResult> {
    this.request = req;
    try {
      this.result = await this.inner.run(req, opts);
      this.stderr = this.result.stderr;
      return this.result;
    } catch (err) {
      const printed = err instanceof HelperError ? err.unredactedOutput() : undefined;
      if (printed !== undefined) {
        this.stdout = printed.stdout;
        this.stderr = printed.stderr;
      }
      throw err;
    }
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

export async function testHelper(input: HelperTestInput): Promise<HelperTestReport> {
  const cfg = input.config;
  const logger = input.logger ?? silentLogger();
  // as `run` builds it; a pool starts its processes on demand, so one request starts one
  const helper = new RecordingHelper(helperRunnerFor(cfg, input.helper));
  const report = (outcome: string, ok: boolean): HelperTestReport => ({
    request: helper.request,
    reply: helper.result?.reply,
    ...(helper.stdout !== undefined ? { stdout: helper.stdout } : {}),
    stderr: helper.stderr,
    warnings: helper.result === undefined ? [] : replyWarnings(helper.result.reply),
    durationMs: helper.result?.durationMs,
    outcome,
    ok,
  });
  try {
    if (input.request !== undefined) {
      try {
        await helper.run(input.request, { identity: input.request.identity });
        return report('the helper answered a valid reply (saved request: nothing was checked against a node)', true);
      } catch (err) {
        return report(errorText(err), false);
      }
    }
    if (input.choria === undefined) throw new Error('a live helper test needs the Choria client settings');
    // a one-off command gives up on an unreachable broker instead of retrying for ever like run
    const client = await ChoriaClient.connect(input.choria, {
      logger,
      name: 'choria-provisioner helper test',
      maxConnectAttempts: 3,
    });
    try {
      const host = new Host(
        { config: cfg, client, helper, metrics: NO_METRICS, pause: new PauseFlag(false), dryRun: true },
        {
          identity: input.identity,
          discoveredAt: Date.now(),
          signal: new AbortController().signal,
          logger,
          onStep: () => undefined,
        },
      );
      const result = await host.provision();
      // the error in full (redacted), not the monitor port's wording: the output is printed apart
      return report(result.detail ?? result.message ?? result.outcome, result.outcome === 'dry_run');
    } finally {
      await client.close().catch(() => undefined);
    }
  } finally {
    await helper.close().catch(() => undefined);
  }
}

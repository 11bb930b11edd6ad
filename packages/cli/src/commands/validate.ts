// `choria-provisioner validate`: loads everything a run would load, checks the helper and key files,
// and prints what it found; exit 1 with every reason otherwise.
import {
  loadSiteChoria,
  ConfigError,
  checkHelperCommand,
  loadProvisionerConfig,
  loadSigningKey,
  loadVerificationKey,
  selectProtocol,
  type ProvisionerConfig,
} from '@choria-provisioner/core';
import { EXIT, type CliIO } from '../io.js';

export interface ValidateOptions {
  configs: string[];
  choriaConfig: string | undefined;
}

function errorText(err: unknown): string {
  if (err instanceof ConfigError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

function describeCoordination(c: ProvisionerConfig): string {
  switch (c.coordination) {
    case 'leader_election':
      return `leader election (key ${c.leaderElectionKey})`;
    case 'active_active':
      return `active/active (group ${c.coordinationGroup}, heartbeat ${c.coordinationHeartbeatMs / 1000}s)`;
    default:
      return 'none (a single instance)';
  }
}

function describeConfig(c: ProvisionerConfig): string[] {
  const features = Object.entries(c.features)
    .filter(([, on]) => on)
    .map(([f]) => f);
  const nodeHistory =
    c.historyStore === 'kv'
      ? `bucket ${c.historyBucket} (${c.historyTtlMs / 3_600_000} h, memory when unreachable)`
      : 'this process only (history_store: memory)';
  return [
    `  site:               ${c.site === '' ? '(none)' : c.site}`,
    `  workers:            ${c.workers}`,
    `  interval:           ${c.intervalMs / 1000}s`,
    `  helper:             ${c.helper}`,
    `  helper timeout:     ${c.helperTimeoutMs / 1000}s`,
    `  features:           ${features.length > 0 ? features.join(', ') : '(none)'}`,
    `  lifecycle events:   choria.lifecycle.event.startup.${c.lifecycleComponent}`,
    `  coordination:       ${describeCoordination(c)}`,
    `  node history:       ${nodeHistory}`,
    `  monitor port:       ${c.monitorPort > 0 ? c.monitorPort : 'off'}`,
    `  log:                ${c.logfile ?? 'stdout'} at ${c.loglevel}`,
  ];
}

export async function validateCommand(opts: ValidateOptions, io: CliIO): Promise<number> {
  let failed = false;
  for (const file of opts.configs) {
    const problems: string[] = [];
    const warnings: string[] = [];
    let config: ProvisionerConfig;
    try {
      config = loadProvisionerConfig(file, { onWarning: (w) => warnings.push(w) });
    } catch (err) {
      failed = true;
      io.err(`${file}: INVALID`);
      if (err instanceof ConfigError) for (const r of err.reasons) io.err(`  - ${r}`);
      else io.err(`  - ${errorText(err)}`);
      continue;
    }
    const helperProblem = checkHelperCommand(config.helper);
    if (helperProblem !== undefined) problems.push(helperProblem);
    if (config.features.jwt) {
      try {
        loadVerificationKey(config.jwtVerifyCert);
      } catch (err) {
        problems.push(`jwt_verify_cert: ${errorText(err)}`);
      }
    }
    if (config.features.ed25519 && config.jwtSigningKey !== '') {
      try {
        loadSigningKey(config.jwtSigningKey);
      } catch (err) {
        problems.push(`jwt_signing_key: ${errorText(err)}`);
      }
    }
    let choriaLines: string[] = [];
    try {
      const choria = loadSiteChoria(config, { choriaConfig: opts.choriaConfig });
      const brokers =
        choria.middlewareHosts.length > 0
          ? choria.middlewareHosts.join(', ')
          : '(none: plugin.choria.middleware_hosts is not set)';
      choriaLines = [
        `  choria config:      ${choria.source}`,
        `  identity:           ${choria.identity}`,
        `  brokers:            ${brokers}`,
        `  security:           ${choria.securityProvider}, protocol ${selectProtocol(choria).version}, ` +
          `${choria.protocolSecure ? 'signed' : 'insecure'} requests, TLS ${choria.tls ? 'on' : 'off'}`,
        `  broker user:        ${choria.natsUser ?? '(none)'}`,
      ];
      if (choria.middlewareHosts.length === 0)
        problems.push('the Choria config names no broker (plugin.choria.middleware_hosts)');
    } catch (err) {
      problems.push(errorText(err));
    }
    if (problems.length > 0) {
      failed = true;
      io.err(`${file}: INVALID`);
      for (const p of problems) io.err(`  - ${p}`);
      for (const w of warnings) io.err(`  warning: ${w}`);
      continue;
    }
    io.out(`${file}: OK`);
    for (const l of [...describeConfig(config), ...choriaLines]) io.out(l);
    for (const w of warnings) io.out(`  warning: ${w}`);
  }
  return failed ? EXIT.config : EXIT.ok;
}

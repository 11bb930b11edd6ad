import { basename, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyProvisionerOverrides, checkChoriaSettings, loadChoriaConfig } from '../../src/config/choria-config.js';
import { loadProvisionerConfig } from '../../src/config/provisioner-config.js';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const examples = join(repoRoot, 'examples', 'config');

function load(name: string) {
  const warnings: string[] = [];
  const config = loadProvisionerConfig(join(examples, name), { cpuCount: 2, onWarning: (m) => warnings.push(m) });
  return { config, warnings };
}

describe('examples/config', () => {
  it('provisioner.yaml loads cleanly and targets a modern broker with jwt + pki', () => {
    const { config, warnings } = load('provisioner.yaml');
    expect(warnings).toEqual([]);
    expect(config.choriaInsecure).toBe(false);
    expect(config.brokerProvisioningPassword).not.toBe('');
    expect(config.features).toEqual({ pki: true, jwt: true, ed25519: false, upgrades: false });
    expect(config.intervalMs).toBe(300_000);
    expect(basename(config.choriaConfig ?? '')).toBe('choria.cfg');
    expect(config.renewal).toMatchObject({ windowPercent: 20, concurrency: 10, failureLimit: 3 });
    expect(basename(config.renewal?.choriaConfig ?? '')).toBe('renewer.cfg');
  });

  it('renewer.cfg gives an x509 client on the fleet collective, used as it is', () => {
    const settings = loadChoriaConfig(join(examples, 'renewer.cfg'), { env: {} });
    expect(settings.identity).toBe('renewals.choria');
    expect(settings.mainCollective).toBe('mcollective');
    expect(settings.tls).toBe(true);
    expect(checkChoriaSettings(settings)).toEqual([]);
  });

  it('provisioner-ed25519.yaml loads cleanly as an Organization Issuer HA member', () => {
    const { config, warnings } = load('provisioner-ed25519.yaml');
    expect(warnings).toEqual([]);
    expect(config.features).toEqual({ pki: false, jwt: true, ed25519: true, upgrades: false });
    expect(config.leaderElection).toBe(true);
    expect(config.jwtSigningToken).not.toBe('');
    expect(config.serverJwtValidityMs).toBe(90 * 24 * 3_600_000);
    expect(config.logfile).toBe('stdout');
    expect(basename(config.choriaConfig ?? '')).toBe('choria-issuer.cfg');
  });

  it('provisioner-active-active.yaml loads cleanly as an active/active member', () => {
    const { config, warnings } = load('provisioner-active-active.yaml');
    expect(warnings).toEqual([]);
    expect(config.coordination).toBe('active_active');
    expect(config.leaderElection).toBe(false);
    expect(config.coordinationGroup).toBe('prod');
    expect(config.coordinationHeartbeatMs).toBe(2000);
    expect(config.coordinationLockRetryMs).toBe(130_000);
    expect(config.helperMode).toBe('pool');
    expect(config.features).toEqual({ pki: false, jwt: false, ed25519: false, upgrades: false });
  });

  it('choria.cfg gives a usable x509 client with the provisioner overrides', () => {
    const settings = loadChoriaConfig(join(examples, 'choria.cfg'), { env: {} });
    expect(settings.securityProvider).toBe('file');
    expect(settings.middlewareHosts).toEqual(['nats://broker1.example.net:4222', 'nats://broker2.example.net:4222']);
    const effective = applyProvisionerOverrides(settings, load('provisioner.yaml').config);
    expect(effective.natsUser).toBe('provisioner');
    expect(effective.tls).toBe(true);
    expect(checkChoriaSettings(effective)).toEqual([]);
  });

  it('choria-issuer.cfg gives a usable issuer client with the provisioner overrides', () => {
    const settings = loadChoriaConfig(join(examples, 'choria-issuer.cfg'), { env: {} });
    expect(settings.securityProvider).toBe('choria');
    // go-choria's default collective with the choria security provider
    expect(settings.mainCollective).toBe('choria');
    const yaml = load('provisioner-ed25519.yaml').config;
    expect(settings.seedFile).toBe(yaml.jwtSigningKey);
    expect(settings.tokenFile).toBe(yaml.jwtSigningToken);
    const effective = applyProvisionerOverrides(settings, yaml);
    expect(effective.collectives).toEqual(['provisioning']);
    expect(checkChoriaSettings(effective)).toEqual([]);
  });
});

describe('examples/config upgrades and pool', () => {
  it('provisioner-upgrades-pool.yaml loads cleanly with upgrades and a helper pool', () => {
    const { config, warnings } = load('provisioner-upgrades-pool.yaml');
    expect(warnings).toEqual([]);
    expect(config.features).toEqual({ pki: true, jwt: true, ed25519: false, upgrades: true });
    expect(config.helperMode).toBe('pool');
    expect(config.helperPoolSize).toBe(4);
    expect(config.helperTimeoutMs).toBe(20_000);
    expect(config.upgradesOptional).toBe(true);
  });
});

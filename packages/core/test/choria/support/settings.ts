// Builds ChoriaSettings objects for tests (the real loader is somebody else's module).
import type { ChoriaSettings } from '../../../src/config/types.js';

export function testSettings(overrides: Partial<ChoriaSettings> = {}): ChoriaSettings {
  return {
    source: '<test>',
    identity: 'provisioner.example.net',
    middlewareHosts: ['nats://127.0.0.1:1'],
    collectives: ['provisioning'],
    mainCollective: 'provisioning',
    securityProvider: 'file',
    protocolSecure: false,
    tls: false,
    certificateFile: undefined,
    keyFile: undefined,
    caFile: undefined,
    tokenFile: undefined,
    seedFile: undefined,
    certname: 'provisioner.example.net',
    natsUser: undefined,
    natsPassword: undefined,
    ttl: 60,
    discoveryTimeout: 1,
    loglevel: undefined,
    logfile: undefined,
    raw: {},
    ...overrides,
  };
}

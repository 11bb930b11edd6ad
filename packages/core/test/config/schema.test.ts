import { describe, expect, it } from 'vitest';
import { DEFAULT_CERT_DENY_LIST, describeProvisionerKeys, provisionerConfigSchema } from '../../src/config/schema.js';
import { createSchemaAjv, validateWithSchema } from '../../src/config/schema-validation.js';

describe('provisioner schema', () => {
  it('is a valid JSON Schema in ajv strict mode', () => {
    const ajv = createSchemaAjv({ checkSchema: true });
    expect(ajv.validateSchema(provisionerConfigSchema)).toBe(true);
    expect(() => ajv.compile(provisionerConfigSchema)).not.toThrow();
  });

  it('lists every upstream key and our extensions, each with a description', () => {
    const keys = describeProvisionerKeys().map((k) => k.key);
    for (const key of [
      'workers',
      'interval',
      'logfile',
      'loglevel',
      'helper',
      'token',
      'lifecycle_component',
      'choria_insecure',
      'site',
      'monitor_port',
      'broker_port',
      'broker_provisioning_password',
      'cert_deny_list',
      'jwt_verify_cert',
      'jwt_signing_key',
      'jwt_signing_token',
      'server_jwt_validity',
      'rego_policy',
      'leader_election',
      'upgrades_repository',
      'upgrades_optional',
      'features.pki',
      'features.jwt',
      'features.ed25519',
      'features.upgrades',
      'helper_timeout',
      'leader_election_key',
      'leader_election_bucket',
      'streams_api_prefix',
      'choria_config',
      'leader_election_name',
      'management',
    ]) {
      expect(keys).toContain(key);
    }
    for (const doc of describeProvisionerKeys()) expect(doc.description.length, doc.key).toBeGreaterThan(20);
    expect(
      describeProvisionerKeys()
        .filter((k) => k.extension)
        .map((k) => k.key)
        .sort(),
    ).toEqual([
      'choria_config',
      'coordination',
      'coordination_group',
      'coordination_handover',
      'coordination_heartbeat',
      'coordination_lock_retry',
      'helper_mode',
      'helper_pool_depth',
      'helper_pool_size',
      'helper_spawner',
      'helper_timeout',
      'history_api_prefix',
      'history_bucket',
      'history_store',
      'history_ttl',
      'identity_case_twins',
      'leader_election_bucket',
      'leader_election_key',
      'liveness_timeout',
      'monitor_allowed_hosts',
      'monitor_api_token',
      'monitor_tls_cert',
      'monitor_tls_key',
      'quarantine_after',
      'quarantine_release_on_startup',
      'renewal_choria_config',
      'renewal_concurrency',
      'renewal_failure_limit',
      'renewal_margin',
      'renewal_return_timeout',
      'renewal_window',
      'retry_backoff',
      'retry_backoff_max',
      'streams_api_prefix',
    ]);
  });

  it('is frozen', () => {
    expect(Object.isFrozen(provisionerConfigSchema)).toBe(true);
    expect(Object.isFrozen(provisionerConfigSchema.properties['features']?.properties)).toBe(true);
    expect(Object.isFrozen(DEFAULT_CERT_DENY_LIST)).toBe(true);
  });

  it('fills defaults without sharing the default objects', () => {
    const a = validateWithSchema({}, provisionerConfigSchema).data;
    const b = validateWithSchema({}, provisionerConfigSchema).data;
    expect(a['cert_deny_list']).toEqual([...DEFAULT_CERT_DENY_LIST]);
    expect(a['cert_deny_list']).not.toBe(b['cert_deny_list']);
    expect(a['features']).toEqual({ pki: false, jwt: false, ed25519: false, upgrades: false });
  });

  it('replaces invalid values by their defaults after reporting them', () => {
    const { data, issues } = validateWithSchema({ workers: 'x', features: { pki: 'y' } }, provisionerConfigSchema);
    expect(issues.map((i) => i.key)).toEqual(['workers', 'features.pki']);
    expect(data['workers']).toBe(0);
    expect(data['features']).toEqual({ pki: false, jwt: false, ed25519: false, upgrades: false });
  });
});

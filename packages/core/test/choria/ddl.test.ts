import { describe, expect, it } from 'vitest';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';
import { checkedAgentDdl, choriaProvisionDdl, rpcutilDdl } from '../../src/choria/ddl/agents.js';
import { actionDdl, actionTimeoutMs, ddlTimeoutMs, knownAgents } from '../../src/choria/ddl/registry.js';
import { inputProblems, validateInputs } from '../../src/choria/ddl/validate.js';
import { RpcInputError } from '../../src/choria/errors.js';

describe('embedded DDLs', () => {
  it('equal the DDLs go-choria ships with its generated clients', () => {
    expect(choriaProvisionDdl).toEqual(readVectorJson('ddl', 'client', 'choria_provisionclient', 'ddl.json'));
    expect(rpcutilDdl).toEqual(readVectorJson('ddl', 'client', 'rpcutilclient', 'ddl.json'));
    expect(knownAgents().sort()).toEqual(['choria_provision', 'rpcutil']);
  });

  it('refuse a DDL file of the wrong shape, naming it and the part', () => {
    const base = readVectorJson('ddl', 'client', 'rpcutilclient', 'ddl.json') as { actions: { input: object }[] };
    expect(() => checkedAgentDdl([], 'x.json')).toThrow(
      'the agent DDL x.json is not of the expected shape: no metadata object',
    );
    expect(() => checkedAgentDdl({ metadata: { name: 'a', timeout: '2' }, actions: [] }, 'x.json')).toThrow(
      'metadata.timeout',
    );
    expect(() => checkedAgentDdl({ metadata: { name: 'a', timeout: 2 }, actions: {} }, 'x.json')).toThrow(
      'actions is not a list',
    );
    const badType = { ...base, actions: [{ action: 'ping', input: { n: { type: 'text' } }, output: {} }] };
    expect(() => checkedAgentDdl(badType, 'x.json')).toThrow('ping.input.n has the unknown type "text"');
    expect(checkedAgentDdl(base, 'x.json')).toBe(base);
  });

  it('give the action timeouts (0 means 10 s)', () => {
    expect(actionTimeoutMs('choria_provision')).toBe(20_000);
    expect(actionTimeoutMs('rpcutil')).toBe(2_000);
    expect(ddlTimeoutMs({ ...rpcutilDdl, metadata: { ...rpcutilDdl.metadata, timeout: 0 } })).toBe(10_000);
    expect(() => actionTimeoutMs('discovery')).toThrow('no DDL for agent "discovery"');
    expect(actionDdl('choria_provision', 'gen25519')?.input['nonce']?.type).toBe('string');
  });
});

describe('validateInputs', () => {
  const message = (agent: string, action: string, data: Record<string, unknown>): string => {
    try {
      validateInputs(agent, action, data);
    } catch (err) {
      expect(err).toBeInstanceOf(RpcInputError);
      return (err as Error).message;
    }
    return 'no error';
  };

  it('accepts what the Go provisioner sends', () => {
    expect(() => validateInputs('rpcutil', 'inventory', {})).not.toThrow();
    expect(() => validateInputs('choria_provision', 'jwt', { token: '' })).not.toThrow();
    expect(() =>
      validateInputs('choria_provision', 'gen25519', { nonce: 'c3f1a6d0e2b94f6c8d7e5a4b3c2d1e0f', token: 's3cret' }),
    ).not.toThrow();
    expect(() => validateInputs('choria_provision', 'restart', { splay: 1, token: 't' })).not.toThrow();
    expect(() =>
      validateInputs('choria_provision', 'configure', {
        action_policies: {},
        config: '{"identity":"n1"}',
        ecdh_public: '',
        opa_policies: { 'x.rego': 'package x' },
        server_jwt: '',
        token: '',
        ca: '',
        certificate: '',
        ssldir: '',
        key: '',
      }),
    ).not.toThrow();
    expect(() => validateInputs('choria_provision', 'gencsr', { token: '', cn: 'n1', OU: undefined })).not.toThrow();
  });

  it('names agent, action and input for type errors', () => {
    expect(message('choria_provision', 'restart', { splay: 1.5, token: '' })).toBe(
      'choria_provision#restart: input "splay" must be an integer, got 1.5',
    );
    expect(message('choria_provision', 'restart', { splay: -1, token: '' })).toBe(
      'choria_provision#restart: input "splay" must not be negative, got -1',
    );
    expect(message('choria_provision', 'jwt', { token: 5 })).toBe(
      'choria_provision#jwt: input "token" must be a string, got 5',
    );
    expect(message('choria_provision', 'configure', { config: '{}', action_policies: [] })).toBe(
      'choria_provision#configure: input "action_policies" must be a hash (JSON object), got an array',
    );
    expect(message('choria_provision', 'configure', { config: '{}', opa_policies: { 'a.rego': 1 } })).toBe(
      'choria_provision#configure: input "opa_policies" must map names to strings, got 1 for "a.rego"',
    );
  });

  it('reports missing required inputs and unknown inputs together', () => {
    expect(message('choria_provision', 'gen25519', { token: '', nounce: 'x' })).toBe(
      'choria_provision#gen25519: input "nonce" is required; choria_provision#gen25519: unknown input "nounce"',
    );
    expect(inputProblems('choria_provision', 'configure', {})).toEqual([
      'choria_provision#configure: input "config" is required',
    ]);
    expect(inputProblems('choria_provision', 'jwt', { token: '', toString: 'x' })).toEqual([
      'choria_provision#jwt: unknown input "toString"',
    ]);
  });

  it('rejects unknown agents and actions', () => {
    expect(message('nope', 'x', {})).toBe('no DDL for agent "nope" (known: choria_provision, rpcutil)');
    expect(message('rpcutil', 'explode', {})).toMatch(
      /^rpcutil#explode: unknown action \(rpcutil has agent_inventory, .*inventory/,
    );
  });

  it('never echoes string values, which may be tokens or keys', () => {
    const text = message('choria_provision', 'restart', { splay: 'topsecret', token: '' });
    expect(text).toBe('choria_provision#restart: input "splay" must be an integer, got a string');
    expect(text).not.toContain('topsecret');
  });
});

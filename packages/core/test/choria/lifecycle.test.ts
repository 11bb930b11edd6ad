import { IdentityRefusedError } from '../../src/choria/identity.js';
import { describe, expect, it } from 'vitest';
import { readVector } from '@choria-provisioner/test-support/vectors';
import {
  encodeLifecycleEvent,
  LifecycleEventError,
  newLifecycleEvent,
  parseLifecycleEvent,
} from '../../src/choria/lifecycle.js';

const startup = {
  type: 'startup',
  protocol: 'io.choria.lifecycle.v1.startup',
  id: '01e72410-d734-4611-9485-8c6a2dd2579b',
  identity: 'ginkgo.example.net',
  component: 'ginkgo',
  timestamp: 1535106973,
  version: '1.2.3',
};

describe('parseLifecycleEvent', () => {
  it('parses the Choria-format example', () => {
    expect(parseLifecycleEvent(Buffer.from(readVector('lifecycle', 'examples', 'startup-choria-format.json')))).toEqual(
      { ...startup, format: 'choria' },
    );
  });

  it('parses the CloudEvents example, type from data.protocol', () => {
    expect(parseLifecycleEvent(readVector('lifecycle', 'examples', 'startup-cloudevent-format.json'))).toEqual({
      ...startup,
      format: 'cloudevents',
    });
  });

  it('parses the upstream shutdown test data in both formats', () => {
    expect(parseLifecycleEvent(readVector('lifecycle', 'testdata', 'choriaFormatShutdown.json'))).toEqual({
      type: 'shutdown',
      protocol: 'io.choria.lifecycle.v1.shutdown',
      id: 'cb6f1dbc-d65b-49b9-907e-e4a51bee75f8',
      identity: 'dev1.devco.net',
      component: 'server',
      timestamp: 1575482338,
      format: 'choria',
    });
    const ce = parseLifecycleEvent(readVector('lifecycle', 'testdata', 'cloudEventFormatShutdown.json'));
    expect(ce).toMatchObject({
      type: 'shutdown',
      identity: 'ginkgo.example.net',
      component: 'ginkgo',
      timestamp: 1535106973,
      format: 'cloudevents',
    });
  });

  it('decodes CloudEvents carrying data_base64', () => {
    const data = Buffer.from(
      JSON.stringify({ ...startup, version: '0.29.4', component: 'provision_mode_server' }),
    ).toString('base64');
    const ev = parseLifecycleEvent(
      JSON.stringify({
        specversion: '1.0',
        id: 'x',
        source: 'io.choria.lifecycle',
        type: 'io.choria.lifecycle.v1.startup',
        data_base64: data,
      }),
    );
    expect(ev).toMatchObject({
      type: 'startup',
      component: 'provision_mode_server',
      version: '0.29.4',
      format: 'cloudevents',
    });
  });

  it('takes the type from data.protocol, not the CloudEvent type', () => {
    const ce = JSON.parse(readVector('lifecycle', 'examples', 'startup-cloudevent-format.json')) as Record<
      string,
      unknown
    >;
    ce['type'] = 'io.choria.lifecycle.v1.shutdown';
    expect(parseLifecycleEvent(JSON.stringify(ce)).type).toBe('startup');
  });

  it.each([
    ['not JSON', 'not json at all', /^invalid lifecycle event: event: invalid JSON/],
    ['a JSON array', '[1,2]', /not a JSON object/],
    [
      'a different protocol',
      '{"protocol":"choria:registration:1","identity":"x"}',
      /^invalid lifecycle event: unsupported event format$/,
    ],
    [
      'the legacy spelling',
      JSON.stringify({ ...startup, protocol: 'choria:lifecycle:startup:1' }),
      /unsupported event format/,
    ],
    [
      'a 4-token protocol',
      JSON.stringify({ ...startup, protocol: 'io.choria.lifecycle.startup' }),
      /is not of the form io\.choria\.lifecycle\.<version>\.<type>/,
    ],
    [
      'a 6-token protocol',
      JSON.stringify({ ...startup, protocol: 'io.choria.lifecycle.v1.startup.extra' }),
      /is not of the form/,
    ],
    [
      'an unknown type',
      JSON.stringify({ ...startup, protocol: 'io.choria.lifecycle.v1.exploded' }),
      /unknown event type "exploded"/,
    ],
    ['a fractional timestamp', JSON.stringify({ ...startup, timestamp: 1.5 }), /"timestamp" must be an integer/],
    ['no identity', JSON.stringify({ ...startup, identity: undefined }), /"identity" is missing/],
    [
      'a CloudEvent from elsewhere',
      JSON.stringify({ specversion: '1.0', source: 'elsewhere', data: startup }),
      /unsupported event format/,
    ],
    [
      'a CloudEvent with legacy data',
      JSON.stringify({
        specversion: '1.0',
        source: 'io.choria.lifecycle',
        data: { ...startup, protocol: 'choria:lifecycle:startup:1' },
      }),
      /is not of the form/,
    ],
    [
      'a CloudEvent without data',
      JSON.stringify({ specversion: '1.0', source: 'io.choria.lifecycle' }),
      /neither a "data" object nor "data_base64"/,
    ],
    [
      'a CloudEvent with bad data_base64',
      JSON.stringify({ specversion: '1.0', source: 'io.choria.lifecycle', data_base64: '%%' }),
      /data_base64 is not valid base64/,
    ],
  ])('rejects %s with a reason', (_name, input, reason) => {
    expect(() => parseLifecycleEvent(input)).toThrow(LifecycleEventError);
    expect(() => parseLifecycleEvent(input)).toThrow(reason);
  });
});

describe('encodeLifecycleEvent', () => {
  const ev = newLifecycleEvent({
    type: 'startup',
    identity: startup.identity,
    component: 'ginkgo',
    version: '1.2.3',
    id: startup.id,
    timestamp: startup.timestamp,
  });

  it('reproduces the upstream Choria-format bytes', () => {
    expect(encodeLifecycleEvent(ev, 'choria')).toBe(
      readVector('lifecycle', 'examples', 'startup-choria-format.json').trimEnd(),
    );
  });

  it('reproduces the upstream CloudEvents bytes', () => {
    expect(encodeLifecycleEvent(ev, 'cloudevents')).toBe(
      readVector('lifecycle', 'examples', 'startup-cloudevent-format.json').trimEnd(),
    );
  });

  it('round-trips every type, including upgraded new_version', () => {
    const up = newLifecycleEvent({
      type: 'upgraded',
      identity: 'n1',
      component: 'server',
      version: '1',
      newVersion: '2',
    });
    expect(JSON.parse(encodeLifecycleEvent(up))).toMatchObject({
      protocol: 'io.choria.lifecycle.v1.upgraded',
      version: '1',
      new_version: '2',
    });
    for (const format of ['choria', 'cloudevents'] as const) {
      expect(parseLifecycleEvent(encodeLifecycleEvent(up, format))).toEqual({ ...up, format });
    }
    const shut = newLifecycleEvent({ type: 'shutdown', identity: 'n1', component: 'server' });
    expect(Object.keys(JSON.parse(encodeLifecycleEvent(shut)) as object)).toEqual([
      'protocol',
      'id',
      'identity',
      'component',
      'timestamp',
    ]);
  });

  it('defaults the id to a UUIDv4 and the timestamp to now', () => {
    const fresh = newLifecycleEvent({ type: 'startup', identity: 'p', component: 'provisioner', version: '0.1.0' });
    expect(fresh.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(Math.abs(fresh.timestamp - Date.now() / 1000)).toBeLessThan(5);
    expect(fresh.format).toBe('choria');
  });
});

describe('lifecycle identities', () => {
  it('refuses identities that fail the identity rule, naming the text they refused', () => {
    for (const identity of [
      '',
      'bad identity',
      'node.>',
      'a..b',
      '*',
      '.lead',
      'trail.',
      '/./',
      'x\u001b[2J',
      'x'.repeat(4100),
    ]) {
      const ev = JSON.stringify({
        protocol: 'io.choria.lifecycle.v1.startup',
        id: 'x',
        identity,
        component: 'provision_mode_server',
        timestamp: 1,
        version: '1',
      });
      let thrown: unknown;
      try {
        parseLifecycleEvent(new TextEncoder().encode(ev));
      } catch (err) {
        thrown = err;
      }
      expect(thrown, identity).toBeInstanceOf(IdentityRefusedError);
      expect((thrown as IdentityRefusedError).text).toBe(identity);
    }
  });
});

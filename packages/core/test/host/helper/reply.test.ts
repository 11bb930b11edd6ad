import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { HelperReplyError } from '../../../src/host/helper/errors.js';
import {
  REPLY_SCHEMA,
  assertAcceptedByNode,
  assertConfigurable,
  parseHelperReply,
  replyWarnings,
} from '../../../src/host/helper/reply.js';

function replyError(text: string): HelperReplyError {
  try {
    parseHelperReply(text);
  } catch (err) {
    if (err instanceof HelperReplyError) return err;
    throw err;
  }
  throw new Error(`expected ${text} to be rejected`);
}

// The validator skips the meta-schema check at run time (it costs a starting process ~100 ms): the
// schema is checked here instead.
describe('helper reply schema', () => {
  it('is a valid JSON Schema in ajv strict mode', () => {
    const ajv = new Ajv({ strict: true, allowUnionTypes: true });
    expect(ajv.validateSchema(REPLY_SCHEMA)).toBe(true);
    expect(ajv.errors ?? null).toBeNull();
    expect(() => ajv.compile(REPLY_SCHEMA)).not.toThrow();
  });
});

const EXAMPLE_A = {
  defer: false,
  shutdown: false,
  msg: 'web01.example.net enrolled for customer acme',
  key: '',
  certificate: '',
  ca: '',
  ssldir: '',
  server_claims: {
    collectives: ['choria', 'acme'],
    ou: 'choria',
    exp: 1804151520,
    pub_subjects: ['acme.registration.>'],
    permissions: { submission: true, streams: true, governor: false, service_host: false },
  },
  configuration: {
    identity: 'web01.example.net',
    'plugin.choria.server.provision': 'false',
    collectives: 'choria,acme',
  },
  action_policies: {},
  opa_policies: { 'default.rego': 'package io.choria.mcorpc.authpolicy\n' },
  upgrade: '0.29.4',
};

describe('parseHelperReply', () => {
  it('accepts a full example reply (every key upstream documents) unchanged', () => {
    expect(parseHelperReply(JSON.stringify(EXAMPLE_A))).toEqual(EXAMPLE_A);
  });

  it('accepts a Buffer and an empty object (every key optional)', () => {
    expect(parseHelperReply(Buffer.from('{"defer":true,"msg":"not yet"}\n'))).toEqual({ defer: true, msg: 'not yet' });
    expect(parseHelperReply('{}')).toEqual({});
  });

  it('ignores unknown keys and unknown server_claims fields', () => {
    const reply = parseHelperReply(
      JSON.stringify({
        msg: 'x',
        something_new: { a: 1 },
        server_claims: { identity: 123, iss: ['x'], ou: 'acme', permissions: { streams: true, bogus: 'yes' } },
      }),
    );
    expect(reply).toEqual({ msg: 'x', server_claims: { ou: 'acme', permissions: { streams: true } } });
  });

  it('treats null as not set, and null inside string maps and lists as "" (Go zero values)', () => {
    const reply = parseHelperReply(
      '{"defer":null,"msg":null,"server_claims":null,"configuration":{"a":null,"b":"x"},"opa_policies":null}',
    );
    expect(reply).toEqual({ configuration: { a: '', b: 'x' } });
    expect(parseHelperReply('{"server_claims":{"collectives":["a",null],"exp":null}}')).toEqual({
      server_claims: { collectives: ['a', ''] },
    });
  });

  it('accepts exp as a number or a numeric string, as Go NumericDate does', () => {
    expect(parseHelperReply('{"server_claims":{"exp":"1804151520"}}').server_claims?.exp).toBe(1804151520);
    expect(parseHelperReply('{"server_claims":{"exp":1804151520.5}}').server_claims?.exp).toBe(1804151520.5);
  });

  it('rejects a number in configuration naming the key and value', () => {
    const err = replyError('{"configuration":{"identity":"n1","port":8080}}');
    expect(err.kind).toBe('invalid-reply');
    expect(err.message).toBe('helper reply is invalid: configuration["port"] must be a string, got number 8080');
  });

  it('rejects non-string values in every string map, listing each offender', () => {
    const err = replyError(
      '{"configuration":{"a":true},"action_policies":{"x.policy":{"p":1}},"opa_policies":{"d.rego":["r"]}}',
    );
    expect(err.message).toContain('configuration["a"] must be a string, got boolean true');
    expect(err.message).toContain('action_policies["x.policy"] must be a string, got object {"p":1}');
    expect(err.message).toContain('opa_policies["d.rego"] must be a string, got array ["r"]');
  });

  it('rejects wrongly typed top-level keys', () => {
    expect(replyError('{"defer":"yes"}').message).toBe(
      'helper reply is invalid: defer must be a boolean (true or false), got string "yes"',
    );
    expect(replyError('{"configuration":"a=b"}').message).toBe(
      'helper reply is invalid: configuration must be an object, got string "a=b"',
    );
    expect(replyError('{"certificate":42}').message).toContain('certificate must be a string, got number 42');
  });

  it('types server_claims as upstream reads them', () => {
    expect(replyError('{"server_claims":{"collectives":"a,b"}}').message).toContain(
      'server_claims.collectives must be an array of strings, got string "a,b"',
    );
    expect(replyError('{"server_claims":{"collectives":["a",1]}}').message).toContain(
      'server_claims.collectives[1] must be a string, got number 1',
    );
    expect(replyError('{"server_claims":{"ou":7}}').message).toContain(
      'server_claims.ou must be a string, got number 7',
    );
    expect(replyError('{"server_claims":{"exp":"next year"}}').message).toContain(
      'server_claims.exp must be a number, got string "next year"',
    );
    expect(replyError('{"server_claims":{"exp":true}}').message).toContain(
      'server_claims.exp must be a number, got boolean true',
    );
    expect(replyError('{"server_claims":{"pub_subjects":[{}]}}').message).toContain(
      'server_claims.pub_subjects[0] must be a string, got object {}',
    );
    expect(replyError('{"server_claims":{"permissions":{"streams":"true"}}}').message).toContain(
      'server_claims.permissions.streams must be a boolean (true or false), got string "true"',
    );
    expect(replyError('{"server_claims":{"permissions":[]}}').message).toContain(
      'server_claims.permissions must be an object, got array []',
    );
  });

  it('reports empty output, non-JSON and non-object replies distinctly', () => {
    expect(replyError('').kind).toBe('empty');
    expect(replyError(' \n').kind).toBe('empty');
    const junk = replyError('hello world');
    expect(junk.kind).toBe('invalid-json');
    expect(junk.message).toMatch(/^helper reply is not valid JSON: /);
    expect(replyError('{"a":1} {"b":2}').kind).toBe('invalid-json');
    const arr = replyError('[1,2]');
    expect(arr.kind).toBe('invalid-reply');
    expect(arr.message).toBe('helper reply is invalid: the reply must be a JSON object, got array [1,2]');
    expect(replyError('null').message).toContain('got null');
  });

  it('words a public message apart that names no value of the reply', () => {
    const typed = replyError(
      '{"configuration":{"plugin.choria.network.provisioning.client_password":["hunter2-SECRET"],"token=hunter3-SECRET":7}}',
    );
    expect(typed.publicMessage).toBe(
      'helper reply is invalid: configuration["plugin.choria.network.provisioning.client_password"] must be a string, got an array; configuration[<a key of 20 characters>] must be a string, got a number',
    );
    // the detail names the values, except those of keys that look secret
    expect(typed.message).toBe(
      'helper reply is invalid: configuration["plugin.choria.network.provisioning.client_password"] must be a string, got array [redacted]; configuration["token=[redacted]"] must be a string, got number [redacted]',
    );
    const broken = replyError('{"configuration":{"seed":"deadbeefSEED"} BROKEN');
    expect(broken.publicMessage).toBe(
      'helper reply is not valid JSON: 47 bytes that are not JSON: `,` or `}` expected at position 41',
    );
    // JSON.parse's message would quote the text around the mistake: neither wording uses it
    expect(replyError('{"a": deadbeefSEED}').message).toBe(
      'helper reply is not valid JSON: 19 bytes that are not JSON: a JSON value expected at position 6',
    );
    expect(replyError('"hunter4-SECRET"').publicMessage).toBe(
      'helper reply is invalid: the reply must be a JSON object, got a string',
    );
    // nothing quoted: the public message is the message
    const empty = replyError('');
    expect(empty.publicMessage).toBe(empty.message);
  });

  it('keeps a "__proto__" configuration key as data', () => {
    const reply = parseHelperReply('{"configuration":{"__proto__":"x","a":"b"}}');
    expect(Object.entries(reply.configuration ?? {})).toEqual([
      ['__proto__', 'x'],
      ['a', 'b'],
    ]);
  });
});

describe('replyWarnings', () => {
  const now = 1_750_000_000;

  it('is silent for a good reply', () => {
    expect(replyWarnings(parseHelperReply(JSON.stringify(EXAMPLE_A)), { nowSeconds: now })).toEqual([]);
  });

  it('warns when plugin.choria.server.provision is missing or not "false"', () => {
    const missing = replyWarnings({ configuration: { identity: 'n1' } });
    expect(missing).toHaveLength(1);
    expect(missing[0]).toContain('does not set plugin.choria.server.provision');
    const wrong = replyWarnings({ configuration: { 'plugin.choria.server.provision': 'true' } });
    expect(wrong).toHaveLength(1);
    expect(wrong[0]).toContain('sets plugin.choria.server.provision to "true"; set it to "false"');
  });

  it('does not nag about configuration on defer or shutdown replies', () => {
    expect(replyWarnings({ defer: true, configuration: { identity: 'n1' } })).toEqual([]);
    expect(replyWarnings({ shutdown: true })).toEqual([]);
  });

  it('warns loudly about a relative server_claims.exp', () => {
    const [warning, ...rest] = replyWarnings({ server_claims: { exp: 157_680_000 } }, { nowSeconds: now });
    expect(rest).toEqual([]);
    expect(warning).toContain('server_claims.exp is 157680000, a date in 1974');
    expect(warning).toContain('will be ignored and the default server_jwt_validity used');
  });

  it('warns about an exp within the hour but accepts a later one', () => {
    expect(replyWarnings({ server_claims: { exp: now + 1800 } }, { nowSeconds: now })[0]).toContain('less than 1 hour');
    expect(replyWarnings({ server_claims: { exp: now + 7200 } }, { nowSeconds: now })).toEqual([]);
  });

  it('says nothing of policy file names: a name go-choria refuses is an error (assertAcceptedByNode)', () => {
    expect(
      replyWarnings({
        configuration: { 'plugin.choria.server.provision': 'false' },
        action_policies: { rpcutil: 'x' },
      }),
    ).toEqual([]);
  });
});

describe('assertAcceptedByNode', () => {
  it('refuses an action policy name without .policy, naming the key and the node', () => {
    const reply = { configuration: { a: 'b' }, action_policies: { rpcutil: 'policy default deny', 'ok.policy': 'x' } };
    expect(() => assertAcceptedByNode(reply, 'web1')).toThrow(HelperReplyError);
    expect(() => assertAcceptedByNode(reply, 'web1')).toThrow(
      /action_policies key "rpcutil" does not end in "\.policy".*nothing was sent to web1/,
    );
  });

  it('names a policy file in its public message only when it looks like a file name', () => {
    const catchIt = (reply: Parameters<typeof assertAcceptedByNode>[0]): HelperReplyError => {
      try {
        assertAcceptedByNode(reply, 'web1');
      } catch (err) {
        if (err instanceof HelperReplyError) return err;
      }
      throw new Error('expected a HelperReplyError');
    };
    expect(catchIt({ action_policies: { rpcutil: 'x' } }).publicMessage).toContain(
      'action_policies key "rpcutil" does not end in ".policy"',
    );
    const odd = catchIt({ action_policies: { 'password=hunter5-SECRET': 'x' } });
    expect(odd.publicMessage).toContain('action_policies key <a key of 23 characters> does not end in ".policy"');
    expect(odd.message).toContain('action_policies key "password=[redacted]" does not end');
  });

  it('refuses an OPA policy name without .rego', () => {
    expect(() => assertAcceptedByNode({ opa_policies: { 'default.rego': 'x', 'rpcutil.policy': 'y' } })).toThrow(
      /opa_policies key "rpcutil\.policy" does not end in "\.rego"/,
    );
  });

  it('passes well-named policies and replies without any', () => {
    expect(() =>
      assertAcceptedByNode({ action_policies: { 'rpcutil.policy': 'x' }, opa_policies: { 'default.rego': 'y' } }),
    ).not.toThrow();
    expect(() => assertAcceptedByNode({ configuration: { a: 'b' } })).not.toThrow();
  });
});

describe('assertConfigurable', () => {
  it('throws for a missing or empty configuration, naming the node', () => {
    expect(() => assertConfigurable({}, 'web1')).toThrow(
      /configuration is empty, so there is nothing to configure on web1/,
    );
    expect(() => assertConfigurable({ configuration: {} })).toThrow(HelperReplyError);
  });

  it('passes a reply with configuration', () => {
    expect(() => assertConfigurable({ configuration: { 'plugin.choria.server.provision': 'false' } })).not.toThrow();
  });
});

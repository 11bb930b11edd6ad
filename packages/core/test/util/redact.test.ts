import { describe, expect, it } from 'vitest';
import {
  CHORIA_SECRET_KEYS,
  REDACTED,
  SecretSet,
  isSecretName,
  makeRedactor,
  maskKnownSecrets,
  redactSecrets,
  secretValuesOf,
} from '../../src/util/redact.js';

const JWT = 'eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJub2RlLTEifQ.c2lnbmF0dXJlLXNlY3JldA';
const PEM = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIKEYMATERIAL\n-----END EC PRIVATE KEY-----';
const NKEY = 'SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4';

describe('isSecretName', () => {
  it('knows the secret-holding configuration keys of go-choria', () => {
    for (const key of CHORIA_SECRET_KEYS) expect(isSecretName(key), key).toBe(true);
  });

  it('reads names by their words', () => {
    for (const name of [
      'password',
      'PASSWORD',
      'passwd',
      'db_pass',
      'client_password',
      'clientPassword',
      'x-auth-token',
      'access_token',
      'api_key',
      'apiKey',
      'private_key',
      'secret',
      'CHORIA_SEED',
      'seed',
      'jwt',
      'server_jwt',
      'credentials',
      'cht',
      'chpwd',
      'Authorization',
      'key',
    ]) {
      expect(isSecretName(name), name).toBe(true);
    }
    // where a secret is kept, public halves, and ordinary words that contain "key" or "pass"
    for (const name of [
      'plugin.security.choria.seed_file',
      'token_file',
      'ssldir',
      'public_key',
      'ecdh_public',
      'ed25519_pubkey',
      'monkey',
      'keyword',
      'passenger',
      'identity',
      'configuration',
      'plugin.choria.server.provision',
      'msg',
      '',
    ]) {
      expect(isSecretName(name), name).toBe(false);
    }
  });
});

describe('redactSecrets', () => {
  it('blanks the values of secret keys in JSON and keeps the names and the other values', () => {
    const text =
      '{"defer":false,"configuration":{"plugin.choria.network.provisioning.client_password":"hunter2-SECRET","plugin.security.choria.seed":"deadbeefSEED","identity":"web1"}}';
    expect(redactSecrets(text)).toBe(
      `{"defer":false,"configuration":{"plugin.choria.network.provisioning.client_password":"${REDACTED}","plugin.security.choria.seed":"${REDACTED}","identity":"web1"}}`,
    );
  });

  it('works on broken and cut-short JSON', () => {
    expect(redactSecrets('{"configuration":{"db_password":"hunter2-SECRET"} BROKEN')).toBe(
      `{"configuration":{"db_password":"${REDACTED}"} BROKEN`,
    );
    expect(redactSecrets('{"token": "tok-cut-sho')).toBe(`{"token": "${REDACTED}`);
    expect(redactSecrets('{"token": "abc\\"def", "next": "visible"}')).toBe(
      `{"token": "${REDACTED}", "next": "visible"}`,
    );
    expect(redactSecrets('{"seed": 12345678, "port": 4222}')).toBe(`{"seed": ${REDACTED}, "port": 4222}`);
    expect(redactSecrets('{"jwt":null,"key":false}')).toBe('{"jwt":null,"key":false}');
    expect(redactSecrets('{"system.password":["hunter5-x", "y"],"port":"1"}')).toBe(
      `{"system.password":[${REDACTED}],"port":"1"}`,
    );
    expect(redactSecrets('{"credentials":{"user":"bob","password":"pw-123456"}}')).toBe(
      `{"credentials":{"user":"bob","password":"${REDACTED}"}}`,
    );
  });

  it('works inside JSON strings, at any depth of escaping', () => {
    const inner = JSON.stringify({ facts: { mysql_password: 'hunter4-SECRET', os: 'linux' } });
    const once = JSON.stringify({ inventory: inner });
    const out = redactSecrets(once);
    expect(out).not.toContain('hunter4-SECRET');
    expect(out).toContain('linux');
    const twice = JSON.stringify(once);
    expect(redactSecrets(twice)).not.toContain('hunter4-SECRET');
    // a value with an escaped quote inside an escaped string is blanked whole
    const tricky = JSON.stringify(JSON.stringify({ password: 'ab"cd-SECRET', after: 'shown' }));
    const redacted = redactSecrets(tricky);
    expect(redacted).not.toContain('cd-SECRET');
    expect(redacted).toContain('shown');
  });

  it('blanks KEY=value and KEY: value in free text', () => {
    expect(redactSecrets('connecting with password=hunter3-SECRET to the CA')).toBe(
      `connecting with password=${REDACTED} to the CA`,
    );
    expect(redactSecrets("export CHORIA_SEED='deadbeef SEED'; next")).toBe(`export CHORIA_SEED='${REDACTED}'; next`);
    expect(redactSecrets('PASSWORD: hunter5-SECRET\nuser: bob')).toBe(`PASSWORD: ${REDACTED}\nuser: bob`);
    expect(redactSecrets('Authorization: Bearer abc.def-SECRET')).toBe(`Authorization: Bearer ${REDACTED}`);
    expect(redactSecrets("{'api_key' => 'k-SECRET', 'name' => 'x'}")).toBe(
      `{'api_key' => '${REDACTED}', 'name' => 'x'}`,
    );
    expect(redactSecrets('token := "tok-SECRET"')).toBe(`token := "${REDACTED}"`);
  });

  it('blanks PEM blocks, JWTs, nkey seeds and URL passwords whatever they are called', () => {
    expect(redactSecrets(`stderr: ${PEM}\ndone`)).toBe(`stderr: ${REDACTED}\ndone`);
    expect(redactSecrets(JSON.stringify({ note: PEM }))).toBe(`{"note":"${REDACTED}"}`);
    expect(redactSecrets('-----BEGIN RSA PRIVATE KEY-----\nMIIcut')).toBe(REDACTED);
    expect(redactSecrets(`signed ${JWT} ok`)).toBe(`signed ${REDACTED} ok`);
    expect(redactSecrets(`seed ${NKEY}`)).toBe(`seed ${REDACTED}`);
    expect(redactSecrets('nats://provisioner:hunter6-SECRET@broker:4222')).toBe(
      `nats://provisioner:${REDACTED}@broker:4222`,
    );
  });

  it('blanks exact values it was given, also JSON-escaped', () => {
    const secrets = new SecretSet(['tok"en-1234', 'short', undefined]);
    expect(redactSecrets('echo tok"en-1234 and {"x":"tok\\"en-1234"}', secrets)).toBe(
      `echo ${REDACTED} and {"x":"${REDACTED}"}`,
    );
    // too short to mask without blanking ordinary words
    expect(redactSecrets('a short text', secrets)).toBe('a short text');
  });

  it('leaves ordinary text and product wording alone, and is idempotent', () => {
    for (const text of [
      'helper /usr/bin/helper failed for web1: exited with status 1',
      'action_policies key "x.txt" does not end in ".policy"',
      'configuration["plugin.choria.server.provision"] must be a string, got a number',
      'could not perform choria_provision#jwt on web1: 3 tries, last: timed out',
      'nats://broker.example.net:4222',
    ]) {
      expect(redactSecrets(text)).toBe(text);
    }
    const once = redactSecrets(`password=x-SECRET ${JWT}`);
    expect(redactSecrets(once)).toBe(once);
  });
});

describe('maskKnownSecrets', () => {
  it('blanks exact values and shapes but not the values of keys', () => {
    const secrets = new SecretSet(['hunter7-SECRET']);
    expect(maskKnownSecrets(`invalid token: signature mismatch; ${JWT}; hunter7-SECRET`, secrets)).toBe(
      `invalid token: signature mismatch; ${REDACTED}; ${REDACTED}`,
    );
  });
});

describe('makeRedactor and secretValuesOf', () => {
  it('binds a set of secrets; picks the secret values of a configuration', () => {
    const redact = makeRedactor(['p4ssw0rd-xyz']);
    expect(redact('login p4ssw0rd-xyz')).toBe(`login ${REDACTED}`);
    expect(
      secretValuesOf({
        'plugin.nats.pass': 'natspass',
        identity: 'web1',
        'plugin.security.choria.seed_file': '/etc/seed',
        'a.token': '',
      }),
    ).toEqual(['natspass']);
  });
});

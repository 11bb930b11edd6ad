import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { vectorPath } from '@choria-provisioner/test-support/vectors';
import { fleetOptionsFromArgs } from '../src/bin-options.js';
import { parseDurationMs, parseSimulatorArgs } from '../src/cli-args.js';
import { identityFor, resolveFleetOptions } from '../src/options.js';
import { prepareSignerMaterial } from '../src/signer-files.js';

const dirs: string[] = [];
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'sim-cli-test-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('command line', () => {
  it('parses the documented example', () => {
    const a = parseSimulatorArgs(
      '--server nats://127.0.0.1:4222 --count 500 --name sim --protocol v1 --token s3cret --jwt-signer rsa --boot-spread 3s --drop-rate 0.05 --latency 200ms --time-scale 1 --jwt-update'.split(
        ' ',
      ),
    );
    expect(a).toMatchObject({
      servers: ['nats://127.0.0.1:4222'],
      count: 500,
      name: 'sim',
      protocol: 'v1',
      token: 's3cret',
      jwtSigner: 'rsa',
      bootSpreadMs: 3000,
      dropRate: 0.05,
      latencyMs: 200,
      timeScale: 1,
      jwtUpdate: true,
    });
    expect(parseSimulatorArgs(['--server=nats://a:1,nats://b:2', '--count=3']).servers).toEqual([
      'nats://a:1',
      'nats://b:2',
    ]);
    expect(parseSimulatorArgs(['--update-time', '25s']).updateMs).toBe(25_000);
  });

  it('rejects bad input with a reason', () => {
    expect(() => parseSimulatorArgs(['--count', 'x'])).toThrow('--count expects a number, got "x"');
    expect(() => parseSimulatorArgs(['--protocol', 'v3'])).toThrow('--protocol must be one of v1, v2, mixed');
    expect(() => parseSimulatorArgs(['--what'])).toThrow('unknown option "--what"');
    expect(() => parseSimulatorArgs(['--token'])).toThrow('--token needs a value');
    expect(() => parseDurationMs('3 days')).toThrow('invalid duration');
  });

  it('parses durations', () => {
    expect(parseDurationMs('250ms')).toBe(250);
    expect(parseDurationMs('1.5s')).toBe(1500);
    expect(parseDurationMs('2m')).toBe(120_000);
    expect(parseDurationMs('1h')).toBe(3_600_000);
    expect(parseDurationMs('75')).toBe(75);
  });
});

describe('signer key material', () => {
  it('generates keys into a keys dir and reuses them', () => {
    const dir = tempDir();
    const first = prepareSignerMaterial({ signer: undefined, keyFile: undefined, keysDir: dir, protocol: 'v2' });
    expect(first).toMatchObject({
      signer: 'ed25519',
      generated: true,
      publicFile: join(dir, 'provisioning-signer.public'),
    });
    expect(readFileSync(join(dir, 'provisioning-signer.seed'), 'utf8')).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(join(dir, 'provisioning-signer.public'), 'utf8')).toMatch(/^[0-9a-f]{64}$/);
    const again = prepareSignerMaterial({ signer: 'ed25519', keyFile: undefined, keysDir: dir, protocol: 'v2' });
    expect(again).toMatchObject({ generated: false, seedHex: first.seedHex });

    const rsa = prepareSignerMaterial({ signer: undefined, keyFile: undefined, keysDir: dir, protocol: 'v1' });
    expect(rsa.signer).toBe('rsa');
    expect(readFileSync(join(dir, 'provisioning-signer-public.pem'), 'utf8')).toMatch(/^-----BEGIN PUBLIC KEY-----/);
  });

  it('reads a given key file and refuses a mismatching signer', () => {
    const pem = vectorPath('crypto', 'jwt-signer.pem');
    expect(
      prepareSignerMaterial({ signer: undefined, keyFile: pem, keysDir: undefined, protocol: 'v1' }),
    ).toMatchObject({ signer: 'rsa', generated: false });
    expect(() =>
      prepareSignerMaterial({ signer: 'ed25519', keyFile: pem, keysDir: undefined, protocol: 'v1' }),
    ).toThrow('does not match the rsa key');
    const bad = join(tempDir(), 'bad.key');
    writeFileSync(bad, 'nonsense');
    expect(() =>
      prepareSignerMaterial({ signer: undefined, keyFile: bad, keysDir: undefined, protocol: 'v1' }),
    ).toThrow('neither an RSA private key PEM');
    expect(prepareSignerMaterial({ signer: 'none', keyFile: undefined, keysDir: undefined, protocol: 'v1' })).toEqual({
      signer: 'none',
      generated: false,
    });
  });

  it('builds fleet options from arguments', () => {
    const dir = tempDir();
    const a = parseSimulatorArgs([
      '--server',
      'nats://127.0.0.1:1',
      '--count',
      '7',
      '--keys-dir',
      dir,
      '--facts',
      '{"dc":"lon"}',
      '--issuer-public',
      vectorPath('tokens', 'ed25519-signer.public'),
      '--server-jwt-signer-public',
      vectorPath('crypto', 'jwt-signer-public.pem'),
      '--silent-nodes',
      '2',
    ]);
    const { options, publicFile } = fleetOptionsFromArgs(a);
    expect(publicFile !== undefined && existsSync(publicFile)).toBe(true);
    expect(options).toMatchObject({ count: 7, facts: { dc: 'lon' }, silentNodes: 2, jwt: { signer: 'rsa' } });
    expect(options.serverJwtVerification?.issuerPublicHex).toMatch(/^[0-9a-f]{64}$/);
    expect(options.serverJwtVerification?.signerPublicPem).toContain('BEGIN PUBLIC KEY');
    expect(() => fleetOptionsFromArgs(parseSimulatorArgs(['--count', '1']))).toThrow('--server is required');
  });
});

describe('fleet options', () => {
  it('expands identity patterns one-based, padded or zero-based', () => {
    expect(identityFor('node-{i}.example.net', 0)).toBe('node-1.example.net');
    expect(identityFor('n{i:3}', 4)).toBe('n005');
    expect(identityFor('n{i0}', 4)).toBe('n4');
  });

  it('validates options with the option name in the error', () => {
    const base = { servers: ['nats://127.0.0.1:1'], count: 2 };
    expect(() => resolveFleetOptions({ ...base, dropRate: 2 })).toThrow(
      'invalid simulator option dropRate: 2 is not between 0 and 1',
    );
    expect(() => resolveFleetOptions({ ...base, identityPattern: 'fixed' })).toThrow('identityPattern');
    expect(() => resolveFleetOptions({ ...base, identityPattern: 'bad node {i}' })).toThrow(
      'not usable as a NATS subject',
    );
    expect(() => resolveFleetOptions({ ...base, jwt: { signer: 'rsa' } })).toThrow(
      "jwt.keyPem: required when jwt.signer is 'rsa'",
    );
    expect(resolveFleetOptions({ ...base, silentNodes: 0.5 }).silentCount).toBe(1);
    expect(resolveFleetOptions({ ...base, jwt: { signer: 'none', update: true } }).allowUpdate).toBe(true);
  });
});

// Regression test for a deadlock: on Node 20.20 / OpenSSL 3.0 exporting a freshly generated key
// (generateKeyPairSync + export({ format: 'jwk' })) can hang the whole process when a garbage
// collection during the export runs the generation job's destructor. The simulator makes two keys
// for every node; this makes 30,000 the same way, in a child process with a time limit, so a hang
// fails the test instead of the test run.
import { spawnSync } from 'node:child_process';
import { sign, verify } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ed25519PublicFromHex, generateOkpPair } from '../src/crypto/keys.js';

const SCRIPT = fileURLToPath(new URL('./fixtures/many-node-keys.mjs', import.meta.url));

describe('node key generation', () => {
  it('gives the raw public key of the generated private key', () => {
    const pair = generateOkpPair('ed25519');
    expect(pair.publicHex).toMatch(/^[0-9a-f]{64}$/);
    // it is the public half: what the private key signs, the public key verifies
    const signature = sign(null, Buffer.from('nonce'), pair.privateKey);
    expect(verify(null, Buffer.from('nonce'), ed25519PublicFromHex(pair.publicHex), signature)).toBe(true);
    expect(
      verify(null, Buffer.from('nonce'), ed25519PublicFromHex(generateOkpPair('ed25519').publicHex), signature),
    ).toBe(false);
    expect(generateOkpPair('x25519').publicHex).toMatch(/^[0-9a-f]{64}$/);
  });

  it('makes 30,000 node keys (gen25519 and jwt alike) under GC pressure without hanging', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '15000'], { encoding: 'utf8', timeout: 90_000 });
    expect(r.signal, `the key loop did not finish within 90 s (deadlocked?): ${r.stderr}`).toBeNull();
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ pairs: 15000 });
  });
});

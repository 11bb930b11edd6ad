// The identity rule (choria/identity.ts): what a node identity may be, and what happens to one
// that is not.
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import {
  MAX_IDENTITY_LENGTH,
  RefusedIdentities,
  asNodeIdentity,
  nodeIdentity,
  shownIdentity,
  whyNotIdentity,
  IdentityRefusedError,
} from '../../src/choria/identity.js';
import { directedSubject } from '../../src/choria/protocol/subjects.js';
import { ProvisionerMetrics } from '../../src/metrics/metrics.js';
import { captureLogger } from './support/logger.js';

const HOSTILE = [
  '',
  'x'.repeat(4100),
  'x'.repeat(MAX_IDENTITY_LENGTH + 1),
  '*',
  '>',
  'a.*',
  'a.>',
  'a b',
  ' a',
  'a\tb',
  '/./',
  '/.*/',
  'a/b',
  '.a',
  'a.',
  'a..b',
  'evil\u001b[2Jnode',
  'bell\u0007',
  'line\nbreak',
  'cr\rreturn',
  'del\u007f',
  'csi\u009b',
  'rtl\u202eoverride',
  'lone\ud800surrogate',
  'ünïcode.example.net',
  'a:b',
  'a@b',
  'a"b',
];

const GOOD = [
  'n1',
  'node-1.example.net',
  'WEB_01.Example.NET',
  'a'.repeat(MAX_IDENTITY_LENGTH),
  `${'a'.repeat(63)}.${'b'.repeat(63)}`,
  '0',
  'x-y_z',
];

describe('the identity rule', () => {
  it.each(GOOD)('accepts %j', (text) => {
    expect(whyNotIdentity(text)).toBeUndefined();
    expect(asNodeIdentity(text)).toBe(text);
    expect(nodeIdentity(text)).toBe(text);
    expect(() => directedSubject(text)).not.toThrow();
  });

  it.each(HOSTILE.map((t) => [JSON.stringify(t).slice(0, 40), t]))('refuses %s', (_name, text) => {
    const why = whyNotIdentity(text);
    expect(why).toBeTypeOf('string');
    expect(asNodeIdentity(text)).toBeUndefined();
    expect(() => nodeIdentity(text)).toThrow(IdentityRefusedError);
    expect(() => directedSubject(text)).toThrow(/no request is sent/);
  });

  it('says why in words that quote nothing of the text', () => {
    expect(whyNotIdentity('')).toBe('it is empty');
    expect(whyNotIdentity('x'.repeat(4100))).toBe('it is 4100 characters long, more than 253');
    expect(whyNotIdentity('evil\u001b[2J')).toBe(
      'it holds U+001B at position 4: only letters, digits, "-", "_" and dots between labels are allowed',
    );
    expect(whyNotIdentity('a..b')).toMatch(/empty label at position 2/);
    expect(whyNotIdentity('a.')).toBe('it ends with a dot');
    for (const text of HOSTILE) expect(whyNotIdentity(text)).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
  });

  it('keeps every subject built from an identity far below the broker control-line limit', () => {
    const longest = directedSubject('a'.repeat(MAX_IDENTITY_LENGTH));
    expect(Buffer.byteLength(longest)).toBeLessThan(4096 / 8);
  });

  it('shows a refused text cut short and escaped', () => {
    expect(shownIdentity('x'.repeat(4100))).toBe(`"${'x'.repeat(64)}…" (4100 characters)`);
    expect(shownIdentity('a\u001b[2J\nb\u009b')).toBe('"a\\u001b[2J\\u000ab\\u009b"');
  });
});

describe('RefusedIdentities', () => {
  it('counts every refusal and logs each text once per source, escaped', async () => {
    const log = captureLogger();
    const registry = new Registry();
    const metrics = new ProvisionerMetrics(registry, 'lon');
    const refusals = new RefusedIdentities(log.logger);
    refusals.onRefused((source) => metrics.refusedIdentity(source));
    for (let i = 0; i < 5; i++) expect(refusals.admit('evil\u001b[2J', 'event')).toBeUndefined();
    expect(refusals.admit('evil\u001b[2J', 'discovery')).toBeUndefined();
    expect(refusals.admit('n1.example.net', 'discovery')).toBe('n1.example.net');
    const text = await registry.metrics();
    expect(text).toContain('choria_provisioner_refused_identities{site="lon",source="event"} 5');
    expect(text).toContain('choria_provisioner_refused_identities{site="lon",source="discovery"} 1');
    expect(log.lines.filter((l) => l.includes('Refused the node identity'))).toHaveLength(2);
    expect(log.text()).not.toMatch(/\u001b/);
    expect(log.text()).toContain('from a lifecycle event: it holds U+001B at position 4');
  });

  it('forgets the oldest texts beyond its memory, so the log stays bounded but a long-gone text is logged again', () => {
    const log = captureLogger();
    const refusals = new RefusedIdentities(log.logger);
    for (let i = 0; i < 1100; i++) refusals.refuse(`bad ${i}`, 'it holds a space', 'discovery');
    refusals.refuse('bad 1099', 'it holds a space', 'discovery');
    expect(log.lines).toHaveLength(1100);
    refusals.refuse('bad 0', 'it holds a space', 'discovery');
    expect(log.lines).toHaveLength(1101);
  });
});

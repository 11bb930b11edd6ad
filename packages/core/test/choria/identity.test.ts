// The identity rule (choria/identity.ts): what a node identity may be, and what happens to one
// that is not.
import { describe, expect, it, vi } from 'vitest';
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
import { LOG_BUDGET_PER_WINDOW, LOG_BUDGET_WINDOW_MS } from '../../src/util/log-budget.js';
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
  it('counts every refusal and logs it escaped, within the log budget', async () => {
    const log = captureLogger();
    const registry = new Registry();
    const metrics = new ProvisionerMetrics(registry, 'lon');
    const refusals = new RefusedIdentities(log.logger);
    refusals.onRefused((source) => metrics.refusedIdentity(source));
    for (let i = 0; i < 3; i++) expect(refusals.admit('evil\u001b[2J', 'event')).toBeUndefined();
    expect(refusals.admit('evil\u001b[2J', 'discovery')).toBeUndefined();
    expect(refusals.admit('n1.example.net', 'discovery')).toBe('n1.example.net');
    const text = await registry.metrics();
    expect(text).toContain('choria_provisioner_refused_identities{site="lon",source="event"} 3');
    expect(text).toContain('choria_provisioner_refused_identities{site="lon",source="discovery"} 1');
    expect(log.lines.filter((l) => l.includes('Refused the node identity'))).toHaveLength(4);
    expect(log.text()).not.toMatch(/\u001b/);
    expect(log.text()).toContain('from a lifecycle event: it holds U+001B at position 4');
  });

  it('writes a few refusals per window whatever their texts, then one sum: the log stays bounded', () => {
    vi.useFakeTimers();
    try {
      const log = captureLogger();
      const refusals = new RefusedIdentities(log.logger);
      for (let i = 0; i < 20_000; i++) refusals.refuse(`bad ${i}`, 'it holds a space', 'discovery');
      expect(log.lines).toHaveLength(LOG_BUDGET_PER_WINDOW);
      vi.advanceTimersByTime(LOG_BUDGET_WINDOW_MS);
      expect(log.lines).toHaveLength(LOG_BUDGET_PER_WINDOW + 1);
      expect(log.lines.at(-1)).toContain(`${20_000 - LOG_BUDGET_PER_WINDOW} more refused identities in the last 10 s`);
    } finally {
      vi.useRealTimers();
    }
  });
});

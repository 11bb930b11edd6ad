// The interop lab's environment settings: what a run is told to do, checked before it starts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listSetting, wholeNumberSetting } from '../src/lab/env.js';
import { labJwtServers, labServers } from '../src/lab/lab.js';
import { labKinds } from '../src/lab/rows.js';
import { labVariants } from '../src/lab/variants.js';

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the lab settings from the environment', () => {
  it('lists keep the known order, ignore blanks and default to everything', () => {
    vi.stubEnv('LAB_X', ' c , a');
    expect(listSetting('LAB_X', ['a', 'b', 'c'] as const)).toEqual(['a', 'c']);
    vi.stubEnv('LAB_X', undefined);
    expect(listSetting('LAB_X', ['a', 'b'] as const)).toEqual(['a', 'b']);
    expect(listSetting('LAB_X', ['a', 'b'] as const, ['b'])).toEqual(['b']);
  });

  it('a list naming nothing known is an error that says what it takes', () => {
    vi.stubEnv('LAB_KINDS', 'ourz');
    expect(() => labKinds()).toThrow('LAB_KINDS=ourz: expected ours, upstream or several of them (comma-separated)');
    vi.stubEnv('LAB_VARIANTS', 'restart');
    expect(() => labVariants()).toThrow('LAB_VARIANTS=restart: expected plain, broker-restart or several of them');
    vi.stubEnv('LAB_KINDS', 'upstream,ours');
    expect(labKinds()).toEqual(['ours', 'upstream']);
  });

  it('server counts are whole numbers within their bound; the jwt row follows LAB_SERVERS when only that is set', () => {
    vi.stubEnv('LAB_SERVERS', undefined);
    vi.stubEnv('LAB_JWT_SERVERS', undefined);
    expect(labServers()).toBe(20);
    expect(labJwtServers()).toBe(200);
    vi.stubEnv('LAB_SERVERS', '10');
    expect(labJwtServers()).toBe(10);
    vi.stubEnv('LAB_JWT_SERVERS', '150');
    expect(labJwtServers()).toBe(150);
    vi.stubEnv('LAB_SERVERS', '51');
    expect(() => labServers()).toThrow('LAB_SERVERS=51: expected a whole number from 1 to 50');
    vi.stubEnv('LAB_X', '2.5');
    expect(() => wholeNumberSetting('LAB_X', 1, 10)).toThrow('LAB_X=2.5: expected a whole number from 1 to 10');
  });
});

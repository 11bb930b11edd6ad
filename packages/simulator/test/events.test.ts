import { describe, expect, it } from 'vitest';
import { readVector } from '@choria-provisioner/test-support/vectors';
import { goSeconds } from '../src/agents/choria-provision.js';
import { buildLifecycleEvent } from '../src/events.js';

const params = {
  type: 'startup' as const,
  identity: 'ginkgo.example.net',
  component: 'ginkgo',
  version: '1.2.3',
  nowMs: 1_535_106_973_000,
  id: '01e72410-d734-4611-9485-8c6a2dd2579b',
};

describe('lifecycle events', () => {
  it('reproduces the upstream Choria-format startup event', () => {
    expect(buildLifecycleEvent(params, 'choria')).toEqual({
      subject: 'choria.lifecycle.event.startup.ginkgo',
      payload: readVector('lifecycle', 'examples', 'startup-choria-format.json').trim(),
    });
  });

  it('reproduces the upstream CloudEvents startup event', () => {
    expect(buildLifecycleEvent(params, 'cloudevents')?.payload).toBe(
      readVector('lifecycle', 'examples', 'startup-cloudevent-format.json').trim(),
    );
  });

  it('adds new_version to upgraded events, nothing to shutdown events, and publishes nothing for none', () => {
    const up = JSON.parse(
      buildLifecycleEvent({ ...params, type: 'upgraded', newVersion: '2.0.0' }, 'choria')?.payload ?? '{}',
    ) as Record<string, unknown>;
    expect(up).toMatchObject({ protocol: 'io.choria.lifecycle.v1.upgraded', version: '1.2.3', new_version: '2.0.0' });
    const down = JSON.parse(buildLifecycleEvent({ ...params, type: 'shutdown' }, 'choria')?.payload ?? '{}') as Record<
      string,
      unknown
    >;
    expect(Object.keys(down)).toEqual(['protocol', 'id', 'identity', 'component', 'timestamp']);
    expect(buildLifecycleEvent(params, 'none')).toBeUndefined();
  });
});

describe('Go duration text in status messages', () => {
  it('formats whole seconds like time.Duration', () => {
    expect(goSeconds(0)).toBe('0s');
    expect(goSeconds(11)).toBe('11s');
    expect(goSeconds(65)).toBe('1m5s');
    expect(goSeconds(3600)).toBe('1h0m0s');
  });
});

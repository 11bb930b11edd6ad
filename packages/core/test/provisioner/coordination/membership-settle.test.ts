// When a newly formed member settles (acts on ownership), with a connection whose deliveries the
// test controls and fake timers: it settles only after the messages that had arrived by its
// settle time have been read. On a busy process the settle timer can run before the event loop
// reads the connection, where a member's answer may already be waiting.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { encodeHeartbeat } from '../../../src/provisioner/coordination/messages.js';
import { Membership, SETTLE_MS } from '../../../src/provisioner/coordination/membership.js';
import { silentLogger } from '../../../src/util/logger.js';
import { ScriptedConnection } from './scripted-connection.js';

describe('active/active membership: settling', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads what arrived by its settle time before it settles', async () => {
    const nc = new ScriptedConnection();
    let membersWhenSettled: number | undefined;
    const m = new Membership({
      nc: nc.nc,
      group: 'lon',
      instance: 'a.example.net',
      heartbeatMs: 2_000,
      logger: silentLogger(),
      version: 'test',
      report: () => ({ owned: 0, provisioned: 0, queued: 0 }),
      onChange: () => {
        if (m.ready) membersWhenSettled ??= m.members().length;
      },
      onDone: () => undefined,
    });
    m.start();
    const own = nc.published[0]!;
    // its own heartbeat comes back: formed, settling in SETTLE_MS
    nc.deliver(own.subject, own.data);
    expect(m.state).toBe('formed');
    // a member's answer that the connection holds when the settle timer runs
    const peer = encodeHeartbeat({
      instance: 'b.example.net',
      incarnation: 'b0b0',
      intervalMs: 2_000,
      leaving: false,
      owned: 0,
      provisioned: 0,
      queued: 0,
      version: 'test',
    });
    setTimeout(() => nc.deliver(own.subject, new TextEncoder().encode(peer)), SETTLE_MS);
    await vi.advanceTimersByTimeAsync(SETTLE_MS + 10);
    expect(m.ready).toBe(true);
    expect(membersWhenSettled).toBe(2);
    await m.stop();
  });
});

// An active/active member's lease (Membership.leaseEndsAt) with a connection whose deliveries the
// test controls and a fake monotonic clock: each echo of its own heartbeat renews the lease from
// when that heartbeat was sent, and heartbeats lost on the way (a broker outage) must not make
// later echoes stand for older sends, which would end the lease early on every heartbeat after.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseHeartbeat } from '../../../src/provisioner/coordination/messages.js';
import { MEMBER_TIMEOUT_HEARTBEATS, Membership } from '../../../src/provisioner/coordination/membership.js';
import { silentLogger } from '../../../src/util/logger.js';
import { ScriptedConnection } from './scripted-connection.js';

const HB = 2_000;

describe('active/active membership: the lease', () => {
  beforeEach(() => {
    vi.useFakeTimers({
      toFake: [
        'setTimeout',
        'clearTimeout',
        'setInterval',
        'clearInterval',
        'setImmediate',
        'clearImmediate',
        'Date',
        'performance',
      ],
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function member(nc: ScriptedConnection): Membership {
    return new Membership({
      nc: nc.nc,
      group: 'lon',
      instance: 'a.example.net',
      heartbeatMs: HB,
      logger: silentLogger(),
      version: 'test',
      report: () => ({ owned: 0, provisioned: 0, queued: 0 }),
      onChange: () => undefined,
      onDone: () => undefined,
    });
  }
  const leaseAfterSend = MEMBER_TIMEOUT_HEARTBEATS * HB - HB / 2;

  it('numbers its heartbeats, and renews from the send time of the heartbeat that came back', async () => {
    const nc = new ScriptedConnection();
    const m = member(nc);
    const t0 = performance.now();
    m.start();
    expect(m.leaseEndsAt()).toBe(0);
    expect(parseHeartbeat(nc.published[0]!.data).seq).toBe(1);
    nc.echo(0);
    expect(m.leaseEndsAt()).toBe(t0 + leaseAfterSend);
    await vi.advanceTimersByTimeAsync(HB);
    expect(parseHeartbeat(nc.published[1]!.data).seq).toBe(2);
    nc.echo(1);
    expect(m.leaseEndsAt()).toBe(t0 + HB + leaseAfterSend);
    await m.stop();
  });

  it('after heartbeats lost in an outage, later echoes renew from their own send times, not older ones', async () => {
    const nc = new ScriptedConnection();
    const m = member(nc);
    const t0 = performance.now();
    m.start();
    nc.echo(0);
    // heartbeats 2 and 3 go out into an outage and never come back
    await vi.advanceTimersByTimeAsync(2 * HB);
    expect(nc.published).toHaveLength(3);
    // the link is back: heartbeat 4 and every later one comes back a moment after it was sent
    for (let i = 3; i < 10; i++) {
      await vi.advanceTimersByTimeAsync(HB);
      expect(nc.published).toHaveLength(i + 1);
      await vi.advanceTimersByTimeAsync(50);
      nc.echo(i);
      const sentAt = t0 + i * HB;
      expect(m.leaseEndsAt(), `echo of heartbeat ${i + 1}`).toBe(sentAt + leaseAfterSend);
      // so the lease holds until the next echo is due
      expect(m.leaseEndsAt()).toBeGreaterThan(performance.now() + HB);
    }
    await m.stop();
  });

  it('an echo that arrives late (a heartbeat held while the link was down) renews only from its send time', async () => {
    const nc = new ScriptedConnection();
    const m = member(nc);
    const t0 = performance.now();
    m.start();
    nc.echo(0);
    await vi.advanceTimersByTimeAsync(3 * HB);
    // heartbeat 2 was held by the client through an outage and delivered now
    nc.echo(1);
    expect(m.leaseEndsAt()).toBe(t0 + HB + leaseAfterSend);
    // an echo of an older heartbeat than one already heard renews nothing
    nc.echo(0);
    expect(m.leaseEndsAt()).toBe(t0 + HB + leaseAfterSend);
    await m.stop();
  });
});

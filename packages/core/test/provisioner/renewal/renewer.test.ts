import { describe, expect, it } from 'vitest';
import { NodeHistory } from '../../../src/provisioner/history/index.js';
import { provisionedReport } from '../support/shared-history.js';
import {
  LOST_CHECK_MS,
  MAX_LOST_SENDS,
  Renewer,
  SILENT_RECHECK_MS,
  type RenewerOptions,
  type ReprovisionAnswer,
} from '../../../src/provisioner/renewal/renewer.js';
import { renewalDueAt } from '../../../src/provisioner/renewal/plan.js';
import { silentLogger } from '../../../src/util/logger.js';
import type { IssuedCredentials } from '../../../src/host/credentials.js';
import type { RenewalSettings } from '../../../src/config/types.js';

const MIN = 60_000;
const VALIDITY = 100 * MIN;

interface Lab {
  history: NodeHistory;
  renewer: Renewer;
  options: RenewerOptions;
  sent: string[];
  events: string[];
  clock: { now: number };
  answer: (identity: string) => ReprovisionAnswer;
  mine: (identity: string) => boolean;
}

const renewable = (at: number): IssuedCredentials => ({ expiresAt: at + VALIDITY, renewability: { renewable: true } });

function provisioned(history: NodeHistory, identity: string, at: number, credentials = renewable(at)): void {
  history.attempted(identity, provisionedReport(at, credentials));
}

function lab(nodes: number, over: Partial<RenewalSettings> = {}, dryRun = false): Lab {
  const history = new NodeHistory({
    policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0, random: () => 0.5 },
    instance: 'prov1.example.net',
    ttlMs: 10 * VALIDITY,
  });
  for (let i = 0; i < nodes; i++) provisioned(history, `n${i}.example.net`, 0);
  const l: Lab = {
    history,
    sent: [],
    events: [],
    clock: { now: 0 },
    answer: () => ({ kind: 'accepted' }),
    mine: () => true,
    renewer: undefined as unknown as Renewer,
    options: undefined as unknown as RenewerOptions,
  };
  l.options = {
    settings: {
      choriaConfig: 'fleet.cfg',
      windowPercent: 20,
      marginMs: MIN,
      concurrency: 2,
      failureLimit: 3,
      returnTimeoutMs: 5 * MIN,
      ...over,
    },
    history,
    logger: silentLogger(),
    metrics: { renewal: (e) => l.events.push(e), setRenewals: () => undefined },
    mayRenew: (id) => l.mine(id),
    reprovision: (id) => {
      l.sent.push(id);
      return Promise.resolve(l.answer(id));
    },
    dryRun,
    now: () => l.clock.now,
    recordWaitMs: 10,
  };
  l.renewer = new Renewer(l.options);
  return l;
}

/** One look, and the sends it started run to their end. */
async function tick(l: Lab): Promise<void> {
  l.renewer.tick();
  await l.renewer.settled();
}

const allDue = 99 * MIN;

/**
 * The canary is sent and comes back; the others are sent with `answer`, and none comes back
 * within the return timeout (silent on the fleet twice).
 */
async function pastTheCanaryNotBack(l: Lab, answer: (identity: string) => ReprovisionAnswer): Promise<void> {
  l.clock.now = allDue;
  await tick(l);
  provisioned(l.history, l.sent[0] ?? '', l.clock.now + 1_000);
  l.clock.now += 2_000;
  l.answer = answer;
  await tick(l);
  l.clock.now += 5 * MIN + 1;
  await tick(l);
  l.clock.now += SILENT_RECHECK_MS;
  await tick(l);
}

describe('Renewer', () => {
  it('starts a round with one canary and goes on only when the canary is provisioned again', async () => {
    const l = lab(5);
    l.clock.now = allDue;
    await tick(l);
    await tick(l);
    expect(l.sent).toHaveLength(1);
    const canary = l.sent[0] ?? '';
    expect(l.history.get(canary)?.renewalSentAt).toBe(allDue);
    provisioned(l.history, canary, allDue + 1_000);
    l.clock.now += 2_000;
    await tick(l);
    expect(l.sent).toHaveLength(3); // the canary, then `concurrency` at once
    await tick(l);
    expect(l.sent).toHaveLength(3);
    expect(l.events).toEqual(['sent', 'completed', 'sent', 'sent']);
  });

  it('sends every node reprovision once, soonest first, never more than `concurrency` at once', async () => {
    const l = lab(6);
    const order = [...l.history.records()]
      .sort(
        (a, b) =>
          (renewalDueAt(a, { windowPercent: 20, marginMs: MIN }) ?? 0) -
          (renewalDueAt(b, { windowPercent: 20, marginMs: MIN }) ?? 0),
      )
      .map((r) => r.identity);
    l.clock.now = allDue;
    for (let round = 0; round < 10; round++) {
      await tick(l);
      const inFlight = [...l.history.records()].filter((r) => r.renewalSentAt !== undefined);
      expect(inFlight.length).toBeLessThanOrEqual(2);
      for (const r of inFlight) provisioned(l.history, r.identity, l.clock.now + 500);
      l.clock.now += 1_000;
    }
    expect(l.sent).toEqual(order);
    expect(new Set(l.sent).size).toBe(6);
  });

  it('records a refusal with go-choria reason, and stops after `failureLimit` in a row until resumed', async () => {
    const l = lab(4, { failureLimit: 2, concurrency: 4 });
    l.answer = () => ({ kind: 'refused', reason: 'You are not authorized to call this agent or action' });
    l.clock.now = allDue;
    await tick(l); // the canary: refused
    expect(l.renewer.stopped).toBeUndefined();
    await tick(l); // a new round, a new canary: refused, the second in a row
    expect(l.renewer.stopped).toContain('2 renewals failed in a row');
    await tick(l);
    expect(l.sent).toHaveLength(2);
    const failed = [...l.history.records()].filter((r) => r.renewalError !== undefined);
    expect(failed.map((r) => r.renewalError)).toEqual([
      'refused reprovision: You are not authorized to call this agent or action',
      'refused reprovision: You are not authorized to call this agent or action',
    ]);
    expect(l.renewer.view(10).counts).toMatchObject({ failed: 2, due: 2 });

    l.answer = () => ({ kind: 'accepted' });
    expect(l.renewer.resume()).toBe(2);
    await tick(l);
    expect(l.sent).toHaveLength(3);
    expect(l.renewer.view(10).counts).toMatchObject({ failed: 0, 'in-flight': 1 });
  });

  it('a canary not provisioned again in time fails and stops the round with one node out', async () => {
    const l = lab(5);
    l.clock.now = allDue;
    await tick(l);
    l.clock.now += 5 * MIN + 1;
    await tick(l);
    // silent once: asked again SILENT_RECHECK_MS later before it fails
    expect(l.renewer.stopped).toBeUndefined();
    l.clock.now += SILENT_RECHECK_MS;
    await tick(l);
    expect(l.sent).toHaveLength(1);
    expect(l.renewer.stopped).toMatch(/not provisioned again within 5 min|not provisioned again within 300 s/);
    expect(l.renewer.view(10).failed.map((e) => e.identity)).toEqual(l.sent);
    expect(l.events).toEqual(['sent', 'failed']);
  });

  it('past its canary, a node with no sign it got reprovision fails without stopping the renewals', async () => {
    const l = lab(3, { failureLimit: 3, concurrency: 2 });
    // the rest are sent, and never answer (their sender could as well have died before sending)
    await pastTheCanaryNotBack(l, () => ({ kind: 'no-reply', reason: 'no reply within 10 s' }));
    expect(l.sent).toHaveLength(3);
    expect(l.renewer.view(10).failed).toHaveLength(2);
    // two failures in a row, below the limit of three: the renewals go on
    expect(l.renewer.stopped).toBeUndefined();
  });

  it('past its canary, a node that answered reprovision and is not back stops the renewals at once', async () => {
    const l = lab(2, { failureLimit: 3, concurrency: 2 });
    await pastTheCanaryNotBack(l, () => ({ kind: 'accepted' }));
    expect(l.sent).toHaveLength(2);
    expect(l.renewer.stopped).toMatch(/a node's renewal failed: not provisioned again/);
  });

  it('a round stays open while more nodes fall due within a return timeout: no new canary between them', async () => {
    // a window of 1 %: each node is due exactly 99 min after it was provisioned
    const l = lab(0, { windowPercent: 1, concurrency: 2 });
    provisioned(l.history, 'a.example.net', 0);
    for (const id of ['b', 'c', 'd']) provisioned(l.history, `${id}.example.net`, 2 * MIN);
    l.clock.now = 99 * MIN;
    await tick(l);
    expect(l.sent).toEqual(['a.example.net']);
    provisioned(l.history, 'a.example.net', 100 * MIN);
    l.clock.now = 100 * MIN + 1_000;
    await tick(l); // the canary is back, its slot free, b, c and d due within the return timeout
    l.clock.now = 101 * MIN + 1_000;
    await tick(l);
    // the round went on: `concurrency` at once, not one new canary
    expect(l.sent).toHaveLength(3);
  });

  it('a node that did not answer reprovision and is not back in time fails with both causes', async () => {
    const l = lab(3);
    l.answer = () => ({ kind: 'no-reply', reason: 'no reply from n0.example.net within 10 s' });
    l.clock.now = allDue;
    await tick(l);
    expect(l.events).toEqual(['sent']);
    l.clock.now += 5 * MIN + 1;
    await tick(l);
    l.clock.now += SILENT_RECHECK_MS;
    await tick(l);
    expect(l.renewer.view(10).failed[0]?.reason).toMatch(
      /^not provisioned again within .+ of reprovision, which it did not answer \(no reply from .+ within 10 s\)$/,
    );
  });

  it('a reprovision lost on the way (the node still answers on the fleet) is sent again, and fails after MAX_LOST_SENDS', async () => {
    const l = lab(1);
    l.renewer = new Renewer({ ...l.options, answersOnFleet: () => Promise.resolve('answers' as const) });
    l.answer = () => ({ kind: 'no-reply', reason: 'the broker connection was lost while waiting for the reply' });
    l.clock.now = allDue;
    await tick(l);
    expect(l.sent).toEqual(['n0.example.net']);
    // checked LOST_CHECK_MS after it went: still on the fleet, so it never got it
    l.clock.now += LOST_CHECK_MS + 1;
    await tick(l);
    await tick(l);
    expect(l.renewer.stopped).toBeUndefined();
    expect(l.sent).toEqual(['n0.example.net', 'n0.example.net']);
    // sent again until MAX_LOST_SENDS, then the renewal fails saying why
    for (let i = 0; i < 2 * MAX_LOST_SENDS + 4 && l.renewer.stopped === undefined; i++) {
      l.clock.now += 5 * MIN + 1;
      await tick(l);
    }
    expect(l.sent).toHaveLength(MAX_LOST_SENDS + 1);
    expect(l.renewer.stopped).toMatch(/it still answers on the fleet's collective after 4 sends/);
  });

  it('an unanswered reprovision whose node went silent (restarting into provisioning) is waited for, not sent again', async () => {
    const l = lab(1);
    l.renewer = new Renewer({ ...l.options, answersOnFleet: () => Promise.resolve('silent' as const) });
    l.answer = () => ({ kind: 'no-reply', reason: 'no reply within 10 s' });
    l.clock.now = allDue;
    await tick(l);
    l.clock.now += LOST_CHECK_MS + 1;
    await tick(l);
    await tick(l);
    expect(l.sent).toEqual(['n0.example.net']);
    provisioned(l.history, 'n0.example.net', l.clock.now);
    await tick(l);
    expect(l.events).toEqual(['sent', 'completed']);
  });

  it('a node back in provisioning mode but not provisioned yet (a lock, faults) is given three return timeouts', async () => {
    const l = lab(1);
    l.clock.now = allDue;
    await tick(l);
    // an attempt on it ended since: it came back, and is waiting for another provisioner's lock
    l.history.attempted('n0.example.net', {
      outcome: 'skipped_locked',
      message: 'locked',
      at: l.clock.now + 1_000,
      durationMs: 1,
      configured: false,
      discoveredAt: l.clock.now + 900,
    });
    for (let i = 0; i < 4; i++) {
      l.clock.now += (5 * MIN) / 2;
      await tick(l);
      l.clock.now += SILENT_RECHECK_MS;
      await tick(l);
    }
    expect(l.renewer.stopped).toBeUndefined();
    l.clock.now += 5 * MIN;
    await tick(l);
    l.clock.now += SILENT_RECHECK_MS;
    await tick(l);
    expect(l.renewer.stopped).toMatch(/not provisioned again within/);
  });

  it('never sends reprovision to a node go-choria would strand, nor one that is not its own', async () => {
    const l = lab(0);
    provisioned(l.history, 'stranded.example.net', 0, {
      expiresAt: VALIDITY,
      renewability: { renewable: false, reason: 'made without --default' },
    });
    provisioned(l.history, 'other.example.net', 0);
    l.mine = (id) => id !== 'other.example.net';
    l.clock.now = allDue;
    for (let i = 0; i < 3; i++) await tick(l);
    expect(l.sent).toEqual([]);
    const view = l.renewer.view(10);
    expect(view.notRenewable).toEqual([
      expect.objectContaining({ identity: 'stranded.example.net', reason: 'made without --default' }),
    ]);
    expect(view.counts.due).toBe(1);
  });

  it('a node provisioned again without credentials that expire later has failed its renewal', async () => {
    const l = lab(1);
    l.clock.now = allDue;
    await tick(l);
    provisioned(l.history, 'n0.example.net', allDue + 1, renewable(-1));
    await tick(l);
    expect(l.events).toEqual(['sent', 'failed']);
  });

  it('a dry run says what it would send and sends nothing', async () => {
    const l = lab(3, {}, true);
    l.clock.now = allDue;
    await tick(l);
    expect(l.sent).toEqual([]);
    expect([...l.history.records()].every((r) => r.renewalSentAt === undefined)).toBe(true);
    expect(l.renewer.view(10).counts.due).toBe(3);
  });

  it('nothing is due before its time', async () => {
    const l = lab(3);
    l.clock.now = 79 * MIN;
    await tick(l);
    expect(l.sent).toEqual([]);
    expect(l.renewer.view(10).next).toHaveLength(3);
  });
});

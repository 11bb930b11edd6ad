// Renewals of one site run by several instances: one round and one canary for the site, never more
// than `concurrency` renewing at once across them, and a stale view that can neither send a second
// reprovision for renewed credentials nor fail a renewal another instance saw completed. The
// instances share one copy with compare-and-set, as the history bucket gives them.
import { describe, expect, it } from 'vitest';
import { NodeHistory } from '../../../src/provisioner/history/index.js';
import {
  Renewer,
  SILENT_RECHECK_MS,
  STOPPED_SAY_MS,
  type ReprovisionAnswer,
} from '../../../src/provisioner/renewal/renewer.js';
import { RoundStore } from '../../../src/provisioner/renewal/round.js';
import { SharedKv as Shared, provisionedReport } from '../support/shared-history.js';
import { silentLogger } from '../../../src/util/logger.js';
import type { RenewalSettings } from '../../../src/config/types.js';

const MIN = 60_000;
const VALIDITY = 100 * MIN;
const allDue = 99 * MIN;

interface Instance {
  history: NodeHistory;
  renewer: Renewer;
  round: RoundStore;
  errors: string[];
  stoppedGauge: boolean[];
}

const settings: RenewalSettings = {
  choriaConfig: 'fleet.cfg',
  windowPercent: 20,
  marginMs: MIN,
  concurrency: 2,
  failureLimit: 3,
  returnTimeoutMs: 5 * MIN,
};

function instance(
  shared: Shared,
  name: string,
  clock: { now: number },
  sent: string[],
  answer: () => ReprovisionAnswer = () => ({ kind: 'accepted' }),
): Instance {
  const history = new NodeHistory({
    policy: { backoffMs: 0, backoffMaxMs: 0, quarantineAfter: 0, random: () => 0.5 },
    instance: name,
    ttlMs: 10 * VALIDITY,
  });
  shared.follow(history);
  const round = new RoundStore();
  round.attach(shared.roundBacking());
  const errors: string[] = [];
  const logger = silentLogger();
  logger.error = ((m: string) => (errors.push(m), logger)) as typeof logger.error;
  const stoppedGauge: boolean[] = [];
  const renewer = new Renewer({
    settings,
    history,
    logger,
    metrics: { renewal: () => undefined, setRenewals: (_d, _f, stopped) => stoppedGauge.push(stopped) },
    mayRenew: () => true,
    reprovision: (id) => {
      sent.push(id);
      return Promise.resolve(answer());
    },
    now: () => clock.now,
    recordWaitMs: 50,
    round,
  });
  return { history, renewer, round, errors, stoppedGauge };
}

function provision(h: NodeHistory, identity: string, at: number): void {
  h.attempted(identity, provisionedReport(at, at + VALIDITY));
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

async function tickAll(instances: readonly Instance[]): Promise<void> {
  for (const i of instances) {
    await i.round.refresh();
    i.renewer.tick();
  }
  for (const i of instances) await i.renewer.settled();
  await settle();
}

describe('renewals of one site across instances', () => {
  it('one canary for the site, then never more than `concurrency` in flight across three instances', async () => {
    const shared = new Shared();
    const clock = { now: 0 };
    const sent: string[] = [];
    const seed = instance(shared, 'seed', clock, sent);
    for (let n = 0; n < 8; n++) provision(seed.history, `n${n}.example.net`, 0);
    await settle();
    const all = ['a', 'b', 'c'].map((name) => instance(shared, name, clock, sent));
    clock.now = allDue;
    await tickAll(all);
    await tickAll(all);
    expect(sent).toHaveLength(1); // the canary, whichever instance took it
    const inFlight = (): string[] =>
      [...shared.nodes.values()].filter((v) => v.record.renewalSentAt !== undefined).map((v) => v.record.identity);
    for (let round = 0; round < 20 && sent.length < 8; round++) {
      expect(inFlight().length).toBeLessThanOrEqual(settings.concurrency);
      // each node sent back is provisioned again by one of the instances
      for (const id of inFlight()) provision(all[round % 3]!.history, id, clock.now + 1);
      await settle();
      clock.now += 1_000;
      await tickAll(all);
      expect(inFlight().length).toBeLessThanOrEqual(settings.concurrency);
    }
    expect(new Set(sent).size).toBe(8);
    expect(sent).toHaveLength(8);
  });

  it('a stale view sends no second reprovision for renewed credentials and fails no completed renewal', async () => {
    const shared = new Shared();
    const clock = { now: 0 };
    const sentA: string[] = [];
    const sentB: string[] = [];
    const seed = instance(shared, 'seed', clock, []);
    provision(seed.history, 'n0.example.net', 0);
    await settle();
    const a = instance(shared, 'a', clock, sentA);
    const b = instance(shared, 'b', clock, sentB);
    clock.now = allDue;
    await tickAll([a]);
    expect(sentA).toEqual(['n0.example.net']);
    // B provisions the node again while A hears nothing of it (paused, cut off)
    shared.deaf = true;
    provision(b.history, 'n0.example.net', allDue + 1_000);
    await settle();
    expect(a.history.get('n0.example.net')?.renewalSentAt).toBe(allDue); // A's view: still in flight
    // past the return timeout on A's stale view: its failure is refused on the shared copy
    clock.now += 5 * MIN + 1;
    await tickAll([a]);
    clock.now += SILENT_RECHECK_MS; // silent twice: its failure is tried
    await tickAll([a]);
    expect(a.renewer.stopped).toBeUndefined();
    expect(shared.get('n0.example.net')?.generation).toBe(2);
    expect(shared.get('n0.example.net')?.renewalError).toBeUndefined();
    // and its view caught up with the stored version
    expect(a.history.get('n0.example.net')?.generation).toBe(2);
    shared.deaf = false;
    // the renewed credentials are not due yet: nobody sends anything
    await tickAll([a, b]);
    expect([...sentA, ...sentB]).toEqual(['n0.example.net']);
  });

  it("a stop is the site's: it says so as an error at an interval with what expires within a day, and a gauge", async () => {
    const shared = new Shared();
    const clock = { now: 0 };
    const sent: string[] = [];
    const seed = instance(shared, 'seed', clock, []);
    for (let n = 0; n < 3; n++) provision(seed.history, `n${n}.example.net`, 0);
    await settle();
    const refusing = (): ReprovisionAnswer => ({ kind: 'refused', reason: 'Incorrect provision token supplied' });
    const a = instance(shared, 'a', clock, sent, refusing);
    const b = instance(shared, 'b', clock, sent, refusing);
    clock.now = allDue;
    for (let i = 0; i < 6 && a.renewer.stopped === undefined; i++) await tickAll([a]);
    expect(a.renewer.stopped).toContain('3 renewals failed in a row');
    // the other instance reads the stop from the shared round and sends nothing
    await tickAll([b]);
    expect(b.renewer.stopped).toBe(a.renewer.stopped);
    expect(sent).toHaveLength(3);
    await tickAll([a, b]);
    const said = b.errors.filter((e) => e.startsWith('Renewals are stopped'));
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/3 server\(s\), the first at .*will have expired credentials within a day/);
    expect(b.stoppedGauge.at(-1)).toBe(true);
    clock.now += STOPPED_SAY_MS - 1;
    await tickAll([b]);
    expect(b.errors.filter((e) => e.startsWith('Renewals are stopped'))).toHaveLength(1);
    clock.now += 1;
    await tickAll([b]);
    expect(b.errors.filter((e) => e.startsWith('Renewals are stopped'))).toHaveLength(2);
    // one resume resumes them all
    b.renewer.resume();
    await settle();
    await a.round.refresh();
    expect(a.renewer.stopped).toBeUndefined();
    await tickAll([a]);
    expect(a.stoppedGauge.at(-1)).toBe(false);
  });
});

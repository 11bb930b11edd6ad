import { describe, expect, it } from 'vitest';
import type { NodeIdentity } from '../../src/choria/identity.js';
import { Admission, type Candidate } from '../../src/provisioner/admission.js';
import type { CandidateEnd } from '../../src/metrics/metrics.js';

const id = (s: string): NodeIdentity => s as NodeIdentity;
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

interface Harness {
  admission: Admission;
  asked: NodeIdentity[][];
  admitted: Candidate[];
  ends: Record<CandidateEnd, number>;
  refused: string[];
  /** answers the pending asks: those in `answering` answer, then every ask ends */
  answer: (answering: ReadonlySet<string>) => Promise<void>;
}

function harness(
  known: ReadonlySet<string> = new Set(),
  opts: { max?: number; batch?: number; twins?: boolean } = {},
): Harness {
  const refused: string[] = [];
  const asked: NodeIdentity[][] = [];
  const admitted: Candidate[] = [];
  const ends: Record<CandidateEnd, number> = { admitted: 0, unanswered: 0, crowded_out: 0 };
  const pending: { ids: readonly NodeIdentity[]; answered: (i: NodeIdentity) => void; done: () => void }[] = [];
  const admission = new Admission({
    knows: (i) => known.has(i),
    ...(opts.twins === true
      ? {}
      : { caseTwin: (i: NodeIdentity) => [...known].find((k) => k !== i && k.toLowerCase() === i.toLowerCase()) }),
    refuse: (i, why) => refused.push(`${i}: ${why}`),
    confirm: (ids, answered) =>
      new Promise<void>((done) => {
        asked.push([...ids]);
        pending.push({ ids, answered, done });
      }),
    admit: (c) => {
      admitted.push(c);
      return true;
    },
    ended: (how, n) => (ends[how] += n),
    size: () => undefined,
    maxCandidates: opts.max ?? 100,
    batch: opts.batch ?? 10,
    concurrency: 2,
  });
  const answer = async (answering: ReadonlySet<string>): Promise<void> => {
    await tick();
    for (const p of pending.splice(0)) {
      for (const i of p.ids) if (answering.has(i)) p.answered(i);
      p.answered(id('stranger.example.net')); // an answer for a name not asked proves nothing
      p.done();
    }
    await tick();
  };
  return { admission, asked, admitted, ends, refused, answer };
}

const candidate = (name: string, source: Candidate['source'] = 'event'): Candidate => ({
  identity: id(name),
  source,
  reportedVersion: undefined,
});

describe('Admission', () => {
  it('offers a known node at once and asks about an unknown one before it takes any work', async () => {
    const h = harness(new Set(['known.example.net']));
    expect(h.admission.heard(candidate('known.example.net'))).toBe('known');
    expect(h.admission.heard(candidate('new.example.net'))).toBe('candidate');
    expect(h.admitted).toEqual([]);
    await h.answer(new Set(['new.example.net']));
    expect(h.asked).toEqual([['new.example.net']]);
    expect(h.admitted.map((c) => c.identity)).toEqual(['new.example.net']);
    expect(h.ends).toEqual({ admitted: 1, unanswered: 0, crowded_out: 0 });
  });

  it('drops what never answers after one ask, and never admits a name it did not ask about', async () => {
    const h = harness();
    for (let i = 0; i < 15; i++) h.admission.heard(candidate(`silent-${i}.example.net`));
    await h.answer(new Set());
    await h.answer(new Set());
    expect(h.admitted).toEqual([]);
    expect(h.ends.unanswered).toBe(15);
    expect(h.admission.size).toBe(0);
    expect(h.asked.flat()).toHaveLength(15);
  });

  it('asks the newest first and lets a flood crowd out only the oldest waiting names', async () => {
    const h = harness(new Set(), { max: 50, batch: 10 });
    for (let i = 0; i < 1_000; i++) h.admission.heard(candidate(`flood-${i}.example.net`));
    h.admission.heard(candidate('real.example.net'));
    await h.answer(new Set(['real.example.net']));
    // the first batch asked holds the real server, heard last
    expect(h.asked[0]?.[0]).toBe('real.example.net');
    expect(h.admitted.map((c) => c.identity)).toEqual(['real.example.net']);
    expect(h.ends.crowded_out).toBe(1_001 - 50);
    expect(h.admission.size).toBeLessThanOrEqual(50);
  });

  it('tells a waiting caller whether its candidate was added', async () => {
    const h = harness();
    const yes = h.admission.heard(candidate('a.example.net', 'discovery'), true);
    const no = h.admission.heard(candidate('b.example.net', 'discovery'), true);
    await h.answer(new Set(['a.example.net']));
    expect(await yes).toBe(true);
    expect(await no).toBe(false);
  });

  it('ends every waiting candidate on stop, and admits nothing afterwards', async () => {
    const h = harness();
    const waiting = h.admission.heard(candidate('a.example.net'), true);
    h.admission.stop();
    expect(await waiting).toBe(false);
    expect(h.admission.heard(candidate('b.example.net'))).toBe('candidate');
    await h.answer(new Set(['a.example.net', 'b.example.net']));
    expect(h.admitted).toEqual([]);
  });
  it('refuses an identity equal but for case to a known node, and asks nothing for it, unless twins are allowed', async () => {
    const h = harness(new Set(['web1.example.net']));
    expect(h.admission.heard(candidate('WEB1.example.net'))).toBe('refused');
    expect(h.refused).toEqual([
      'WEB1.example.net: it equals the known node web1.example.net but for case, and certificate names ignore case ' +
        '(identity_case_twins: true allows it)',
    ]);
    await h.answer(new Set(['WEB1.example.net']));
    expect(h.asked).toEqual([]);
    const allowing = harness(new Set(['web1.example.net']), { twins: true });
    expect(allowing.admission.heard(candidate('WEB1.example.net'))).toBe('candidate');
  });
  it('a candidate heard again after it answered, before it is offered, is not asked again', async () => {
    const asked: string[][] = [];
    const admitted: string[] = [];
    const admission: Admission = new Admission({
      knows: (i) => admitted.includes(i),
      refuse: () => undefined,
      confirm: (ids, answered) => {
        asked.push([...ids]);
        for (const i of ids) {
          answered(i);
          admission.heard(candidate(i)); // its event again, while its offer waits for the next turn
        }
        return Promise.resolve();
      },
      admit: (c) => (admitted.push(c.identity), true),
      ended: () => undefined,
      size: () => undefined,
    });
    admission.heard(candidate('a.example.net'));
    for (let i = 0; i < 5; i++) await tick();
    expect(asked).toEqual([['a.example.net']]);
    expect(admitted).toEqual(['a.example.net']);
    expect(admission.size).toBe(0);
  });
});

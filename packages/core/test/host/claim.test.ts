// An attempt's claim on its node: asked before every request, the intent of a configure or
// restart recorded first, and the grace of a stopping provisioner owned here.
import { describe, expect, it } from 'vitest';
import { Claim, type ClaimSource, type RecordedChange } from '../../src/host/claim.js';
import { isCancelled, leaseLapsedError } from '../../src/util/cancelled.js';

function lease(): ClaimSource & { refuse: string | undefined; recorded: string[] } {
  const source = {
    refuse: undefined as string | undefined,
    recorded: [] as string[],
    refusal: () => source.refuse,
    recordIntent: async (identity: string, what: RecordedChange) => {
      source.recorded.push(`${identity} ${what}`);
      // the lease lapses while the record is written
      if (what === 'restart') source.refuse = 'the lease ran out';
    },
  };
  return source;
}

describe('Claim', () => {
  it('holds while its lease does, and a lapse is a cancellation of reason lease', () => {
    const l = lease();
    const claim = new Claim('n1.example.net', l);
    expect(() => claim.assertMayAct('choria_provision#configure')).not.toThrow();
    l.refuse = 'this instance is not the leader';
    let thrown: unknown;
    try {
      claim.assertMayAct('choria_provision#configure');
    } catch (err) {
      thrown = err;
    }
    expect(isCancelled(thrown, 'lease')).toBe(true);
    expect((thrown as Error).message).toBe('choria_provision#configure was not sent: this instance is not the leader');
    expect(new Claim('n2.example.net').refusal()).toBeUndefined();
  });

  it('records the intent of configure and restart before they go, and asks again after', async () => {
    const l = lease();
    const claim = new Claim('n1.example.net', l);
    const signal = new AbortController().signal;
    await claim.beforeSend('rpcutil#inventory', undefined, signal);
    await claim.beforeSend('choria_provision#configure', 'configure', signal);
    expect(l.recorded).toEqual(['n1.example.net configure']);
    await expect(claim.beforeSend('choria_provision#restart', 'restart', signal)).rejects.toMatchObject({
      reason: 'lease',
    });
    expect(l.recorded).toEqual(['n1.example.net configure', 'n1.example.net restart']);
  });

  it('gives a stop its grace, and a lapsed lease none', async () => {
    const claim = new Claim('n1.example.net', lease());
    const said: string[] = [];
    const stopping = new AbortController();
    const unit = claim.commit(stopping.signal, 50, (text) => said.push(text));
    stopping.abort(new Error('the provisioner is stopping'));
    expect(unit.signal.aborted).toBe(false);
    expect(said[0]).toContain('finishing configure and restart (at most 50 ms');
    await new Promise((r) => setTimeout(r, 80));
    expect(unit.signal.aborted).toBe(true);
    unit.release();

    const lapsed = new AbortController();
    const now = claim.commit(lapsed.signal, 10_000, (text) => said.push(text));
    lapsed.abort(leaseLapsedError('the attempt', 'leadership was lost'));
    expect(now.signal.aborted).toBe(true);
    now.release();

    const released = new AbortController();
    const quiet = claim.commit(released.signal, 10, () => undefined);
    quiet.release();
    released.abort(new Error('later'));
    await new Promise((r) => setTimeout(r, 30));
    expect(quiet.signal.aborted).toBe(false);
  });
});

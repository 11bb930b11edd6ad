// One cancellation error, its reason saying by what: a stop, a pause or a lapsed lease.
import { describe, expect, it } from 'vitest';
import { CancelledError, abortError, isCancelled, leaseLapsedError, pausedError } from '../../src/util/cancelled.js';
import { ProvisionerError } from '../../src/util/errors.js';

describe('CancelledError', () => {
  it('carries its reason and the wording of each kind', () => {
    expect(pausedError('helper')).toMatchObject({
      reason: 'pause',
      message: 'provisioning is paused, cannot perform helper',
    });
    expect(leaseLapsedError('choria_provision#configure', 'the lease lapsed')).toMatchObject({
      reason: 'lease',
      message: 'choria_provision#configure was not sent: the lease lapsed',
    });
    const err = pausedError('x');
    expect(err).toBeInstanceOf(ProvisionerError);
    expect(err.name).toBe('CancelledError');
  });

  it('isCancelled tells the reasons apart, and nothing else is a cancellation', () => {
    const lease = leaseLapsedError('a', 'b');
    expect(isCancelled(lease)).toBe(true);
    expect(isCancelled(lease, 'lease')).toBe(true);
    expect(isCancelled(lease, 'stop')).toBe(false);
    expect(isCancelled(new Error('x'))).toBe(false);
    expect(isCancelled(new ProvisionerError('x'))).toBe(false);
  });

  it('abortError keeps the reason of a signal aborted with a cancellation, and is a stop otherwise', () => {
    const byLease = new AbortController();
    byLease.abort(leaseLapsedError('the attempt', 'leadership was lost'));
    expect(abortError(byLease.signal, 'rpcutil#inventory')).toMatchObject({
      reason: 'lease',
      message: 'rpcutil#inventory was cancelled: the attempt was not sent: leadership was lost',
    });
    const byStop = new AbortController();
    byStop.abort(new Error('the provisioner is stopping'));
    const stop = abortError(byStop.signal, 'helper');
    expect(stop).toBeInstanceOf(CancelledError);
    expect(stop).toMatchObject({ reason: 'stop', message: 'helper was cancelled: the provisioner is stopping' });
  });
});

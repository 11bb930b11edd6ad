import { describe, expect, it } from 'vitest';
import { NODE_FEATURE_RELEASES, NodeReleaseError, nodeHasFeature } from '../../src/host/node-release.js';

describe('nodeHasFeature', () => {
  it('compares go-choria versions as semver against the release that brought the feature', () => {
    expect(NODE_FEATURE_RELEASES).toEqual({ gen25519: '0.25.0', provisioningLock: '0.29.0' });
    expect(nodeHasFeature('0.24.9', 'gen25519')).toBe(false);
    expect(nodeHasFeature('0.25.0', 'gen25519')).toBe(true);
    expect(nodeHasFeature('v0.30.2', 'gen25519')).toBe(true);
    // numerically, not as text: 0.3 would sort after 0.29 as a string
    expect(nodeHasFeature('0.3.0', 'provisioningLock')).toBe(false);
    expect(nodeHasFeature('0.28.9', 'provisioningLock')).toBe(false);
    expect(nodeHasFeature('0.29.4', 'provisioningLock')).toBe(true);
    expect(nodeHasFeature('1.0.0', 'provisioningLock')).toBe(true);
    // a pre-release of the release that brought it comes before that release
    expect(nodeHasFeature('0.29.0-rc.1', 'provisioningLock')).toBe(false);
  });

  it('says nothing for versions that are not release numbers', () => {
    for (const v of [undefined, '', 'development', 'unknown']) expect(nodeHasFeature(v, 'gen25519')).toBeUndefined();
  });

  it('names the node, the evidence, the setting and the release needed', () => {
    const err = new NodeReleaseError('web1.example.net', 'gen25519', 'runs go-choria 0.24.1', 'features.ed25519');
    expect(err.message).toBe(
      'web1.example.net runs go-choria 0.24.1: features.ed25519 needs go-choria 0.25.0 or newer',
    );
    expect(err.name).toBe('NodeReleaseError');
  });
});

import { describe, expect, it } from 'vitest';
import {
  createHelperRunner,
  FunctionHelper,
  HelperCommandError,
  PoolHelper,
  ProcessHelper,
} from '../../../src/host/helper/index.js';
import { sampleRequest } from './support.js';

describe('createHelperRunner', () => {
  it('builds the runner the configuration asks for', async () => {
    const runners = [
      createHelperRunner({ command: '/bin/true' }),
      createHelperRunner({ command: '/bin/true', mode: 'pool', poolSize: 2 }),
      createHelperRunner({ fn: () => ({ msg: 'hi' }) }),
    ];
    expect(runners[0]).toBeInstanceOf(ProcessHelper);
    expect(runners[1]).toBeInstanceOf(PoolHelper);
    expect(runners[2]).toBeInstanceOf(FunctionHelper);
    expect((await runners[2]?.run(sampleRequest(), { identity: 'n1' }))?.reply).toEqual({ msg: 'hi' });
    await Promise.all(runners.map((r) => r.close()));
  });

  it('fails at construction for an unusable command', () => {
    expect(() => createHelperRunner({ command: '' })).toThrow(HelperCommandError);
    expect(() => createHelperRunner({ command: "x 'y", mode: 'pool' })).toThrow(
      'cannot parse helper command: Unterminated single-quoted string',
    );
  });
});

// `helper test` shows the operator what the helper printed, as printed, while the error it reports
// is the redacted one: the raw text reaches the operator's terminal and nothing else.
import { afterAll, describe, expect, it } from 'vitest';
import { testHelper } from '../../src/host/helper-test.js';
import { testConfig } from '@choria-provisioner/test-support/settings';
import { q, sampleRequest, ScriptDir } from './helper/support.js';

const dir = new ScriptDir();
afterAll(() => dir.remove());

describe('testHelper with a saved request', () => {
  it('reports what a failing helper printed unredacted, and its error redacted', async () => {
    const helper = dir.script(
      'broken.sh',
      `#!/bin/sh
cat >/dev/null
printf '{"configuration":{"plugin.choria.network.provisioning.client_password":"hunter2-SECRET"} BROKEN'
echo 'password=hunter3-SECRET' >&2
`,
    );
    const config = testConfig(`helper: ${q(helper)}\n`);
    const report = await testHelper({ config, identity: 'web1.example.net', request: sampleRequest() });
    expect(report.ok).toBe(false);
    expect(report.stdout).toContain('"hunter2-SECRET"} BROKEN');
    expect(report.stderr).toBe('password=hunter3-SECRET\n');
    expect(report.outcome).toContain('stdout is not valid JSON');
    expect(report.outcome).not.toContain('hunter2-SECRET');
    expect(report.outcome).not.toContain('hunter3-SECRET');
  });

  it('reports no stdout when the reply was accepted', async () => {
    const helper = dir.script(
      'good.sh',
      `#!/bin/sh\ncat >/dev/null\nprintf '{"configuration":{"plugin.choria.server.provision":"false"}}'\necho fine >&2\n`,
    );
    const report = await testHelper({
      config: testConfig(`helper: ${q(helper)}\n`),
      identity: 'web1.example.net',
      request: sampleRequest(),
    });
    expect(report.ok).toBe(true);
    expect(report.stdout).toBeUndefined();
    expect(report.stderr).toBe('fine\n');
  });
});

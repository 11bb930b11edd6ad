// The Helm chart in deploy/helm/choria-provisioner, checked without Helm: the values of each example
// against the chart's values.schema.json (as Helm validates them), the command line, paths, user and
// ports the templates give the container against the image (examples/docker/Dockerfile) and
// Choria's own chart, and the init container's script that adds the keys of a Secret. Helm itself
// lints and renders the chart, every object it renders is decoded strictly into its Kubernetes type
// and the provisioner loads the configuration it renders in scripts/check-helm (CI's "helm chart" step).
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHORIA_CHART, parseDockerfile } from '@choria-provisioner/test-support/dockerfile';
import { repoRoot } from '@choria-provisioner/test-support/vectors';

const chart = join(repoRoot, 'deploy/helm/choria-provisioner');
const read = (path: string): string => readFileSync(join(chart, path), 'utf8');
type Values = Record<string, unknown>;
const defaults = parse(read('values.yaml')) as Values;
const docker = parseDockerfile(readFileSync(join(repoRoot, 'examples/docker/Dockerfile'), 'utf8'));
const deployment = read('templates/deployment.yaml');

const scratch = mkdtempSync(join(tmpdir(), 'cpts-chart-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const isObject = (v: unknown): v is Values => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Helm's merge of a values file over the chart's: maps merge, anything else replaces. */
function merged(base: Values, over: Values): Values {
  const out: Values = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = base[k];
    out[k] = isObject(b) && isObject(v) ? merged(b, v) : v;
  }
  return out;
}

/** `a.b.c` of values */
function at(values: Values, path: string): unknown {
  let v: unknown = values;
  for (const k of path.split('.')) v = isObject(v) ? v[k] : undefined;
  return v;
}

const examples = Object.fromEntries(
  readdirSync(join(chart, 'examples'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => [f.replace(/\.yaml$/, ''), merged(defaults, parse(read(`examples/${f}`)) as Values)]),
);

describe('deploy/helm/choria-provisioner', () => {
  it('is a Helm 3/4 chart (apiVersion v2) of the version the image is built from', () => {
    const meta = parse(read('Chart.yaml')) as Values;
    const cli = JSON.parse(readFileSync(join(repoRoot, 'packages/cli/package.json'), 'utf8')) as { version: string };
    expect(meta['apiVersion']).toBe('v2');
    expect(meta['name']).toBe('choria-provisioner');
    expect(meta['type']).toBe('application');
    // the image's tag defaults to appVersion
    expect(meta['appVersion']).toBe(cli.version);
    expect(at(defaults, 'image.tag')).toBe('');
  });

  it('has example values for one instance, three active/active instances and renewal', () => {
    expect(Object.keys(examples).sort()).toEqual(['active-active', 'renewal', 'single']);
    const { single, renewal } = examples;
    const activeActive = examples['active-active'];
    expect([at(single!, 'replicas'), at(single!, 'coordination')]).toEqual([1, 'none']);
    expect([at(activeActive!, 'replicas'), at(activeActive!, 'coordination')]).toEqual([3, 'active_active']);
    expect(at(activeActive!, 'podDisruptionBudget.enabled')).toBe(true);
    expect(at(activeActive!, 'monitor.serviceMonitor.enabled')).toBe(true);
    expect(at(renewal!, 'renewal.enabled')).toBe(true);
    expect(at(renewal!, 'renewal.tlsSecret')).toBeTruthy();
    expect(at(renewal!, 'coordination')).toBe('leader_election');
    for (const values of Object.values(examples)) {
      expect(at(values, 'choria.brokers')).toMatch(/^nats:\/\//);
      expect(at(values, 'credentials.secretName')).toBeTruthy();
    }
  });

  it('validates every example with values.schema.json, which refuses a value the chart does not know', () => {
    const validate = new Ajv({ strict: true, allowUnionTypes: true, allErrors: true }).compile(
      JSON.parse(read('values.schema.json')),
    );
    for (const [name, values] of Object.entries(examples))
      expect(validate(values) ? [] : validate.errors, name).toEqual([]);
    const single = examples['single']!;
    const misspelt: Values[] = [
      { ...single, imagee: { tag: '1' } },
      merged(single, { choria: { tlsSecrett: 'x' } }),
      merged(single, { coordination: 'active-active' }),
      merged(single, { probes: { readiness: { pathh: '/readyz' } } }),
    ];
    for (const values of misspelt) expect(validate(values)).toBe(false);
  });

  it("passes the image's entry point the command line and paths of Choria's chart, and mounts them there", () => {
    const configDir = /define "choria-provisioner\.configDir" -\}\}([^{]+)\{\{/.exec(
      read('templates/_helpers.tpl'),
    )?.[1];
    expect(configDir).toBe(CHORIA_CHART.mounts.config);
    // no command: the image's entry point, tini and then /usr/sbin/choria-provisioner, runs the arguments
    const container = deployment.slice(deployment.indexOf('containers:\n'));
    expect(container).not.toMatch(/^\s+command:/m);
    const args = /args:\n((?:\s+- .+\n)+)/.exec(container)?.[1] ?? '';
    const words = [...args.matchAll(/- (.+)/g)].map((m) => (m[1] ?? '').replace('{{ $configDir }}', configDir ?? ''));
    expect(words).toEqual(['run', ...CHORIA_CHART.args]);
    expect(docker.execForm('ENTRYPOINT')).toEqual(['/usr/bin/tini', '--', ...CHORIA_CHART.command]);
    for (const path of [CHORIA_CHART.mounts.helper, CHORIA_CHART.mounts.ssl, CHORIA_CHART.mounts.signer])
      expect(container).toContain(`mountPath: ${path}\n`);
    expect(container).toContain('mountPath: {{ $configDir }}\n              readOnly: true');
    // the helper is executable, as Choria's chart mounts it
    expect(deployment).toMatch(/configMap:\n\s+name: \{\{ \.Values\.helper\.configMap \}\}\n\s+defaultMode: 0755/);
  });

  it("runs as the image's user, not root, on a read-only root filesystem with a writable /tmp", () => {
    const user = docker.all('USER').at(-1) ?? '';
    expect(user).toBe(`${CHORIA_CHART.uid}:${CHORIA_CHART.uid}`);
    expect(at(defaults, 'podSecurityContext')).toMatchObject({
      runAsNonRoot: true,
      runAsUser: CHORIA_CHART.uid,
      runAsGroup: CHORIA_CHART.uid,
      fsGroup: CHORIA_CHART.uid,
    });
    expect(at(defaults, 'securityContext')).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    // both containers use it; the pod mounts no service account token unless asked to
    expect(deployment.match(/toYaml \.Values\.securityContext/g)).toHaveLength(2);
    expect(deployment).toMatch(/- name: tmp\n\s+mountPath: \/tmp\n/);
    expect(deployment).toMatch(/- name: tmp\n\s+emptyDir:/);
    expect(at(defaults, 'automountServiceAccountToken')).toBe(false);
  });

  it('probes /healthz and /readyz on the monitor port, the port the image exposes and checks', () => {
    expect(String(at(defaults, 'monitor.port'))).toBe(docker.all('EXPOSE').at(-1));
    expect(docker.execForm('HEALTHCHECK')[2]).toContain(`/healthz`);
    expect(at(defaults, 'probes.liveness.path')).toBe('/healthz');
    expect(at(defaults, 'probes.readiness.path')).toBe('/readyz');
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
      expect(deployment).toMatch(new RegExp(`${probe}:\\n\\s+httpGet:\\n\\s+path: .+\\n\\s+port: monitor\\n`));
    expect(deployment).toMatch(/- name: monitor\n\s+containerPort: \{\{ int \.Values\.monitor\.port \}\}/);
  });

  it('is rendered by a real Helm 4 in CI (scripts/check-helm, npm run check:helm)', () => {
    expect(readFileSync(join(repoRoot, '.ci/run'), 'utf8')).toMatch(/^bash scripts\/check-helm$/m);
    const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts['check:helm']).toContain('bash scripts/check-helm');
    const script = readFileSync(join(repoRoot, 'scripts/check-helm'), 'utf8');
    expect(script).toMatch(/^HELM_VERSION=v4\.\d+\.\d+$/m);
    for (const file of ['go.mod', 'go.sum', 'main.go'])
      expect(existsSync(join(repoRoot, 'deploy/helm/strict-decode', file)), file).toBe(true);
  });
});

describe("the init container's files/render-config.mjs", () => {
  const script = join(chart, 'files/render-config.mjs');

  /** A directory laid out as Kubernetes mounts a ConfigMap: the files in ..data, linked from the top. */
  function configMapVolume(files: Record<string, string>): string {
    const dir = mkdtempSync(join(scratch, 'configmap-'));
    mkdirSync(join(dir, '..2026_01_01_00_00_00.1'));
    symlinkSync('..2026_01_01_00_00_00.1', join(dir, '..data'));
    for (const [name, text] of Object.entries({ ...files, 'render-config.mjs': readFileSync(script, 'utf8') })) {
      writeFileSync(join(dir, '..data', name), text);
      symlinkSync(join('..data', name), join(dir, name));
    }
    return dir;
  }

  async function render(from: string, env: Record<string, string>): Promise<{ code: number; out: string; to: string }> {
    const to = mkdtempSync(join(scratch, 'config-'));
    return await new Promise((resolve) => {
      execFile(
        process.execPath,
        [join(from, 'render-config.mjs'), from, to],
        { env: { PATH: process.env['PATH'] ?? '', ...env } },
        (err, stdout, stderr) => {
          const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
          resolve({ code, out: `${stdout}${stderr}`, to });
        },
      );
    });
  }

  it('is what the template maps the Secret to, and the ConfigMap carries', async () => {
    const mod = (await import(pathToFileURL(script).href)) as { SECRET_KEYS: Record<string, string> };
    // the Secret's key and the init container's variable, as the template pairs them ($secretEnv)
    const pairs = [...deployment.matchAll(/"([a-z_]+)" "(PROVISIONER_[A-Z_]+)"/g)].map((m) => [m[1], m[2]]);
    expect(Object.fromEntries(pairs)).toEqual(mod.SECRET_KEYS);
    expect(Object.keys(mod.SECRET_KEYS).sort()).toEqual(['broker_provisioning_password', 'monitor_api_token', 'token']);
    expect(read('templates/configmap.yaml')).toContain('.Files.Get "files/render-config.mjs"');
    expect(deployment).toMatch(/command: \["node", "\{\{ \$chartDir \}\}\/render-config\.mjs"/);
  });

  it("copies the ConfigMap's files and adds the keys the Secret holds, quoted", async () => {
    const from = configMapVolume({ 'choria-provisioner.yaml': 'site: lon\nworkers: 4\n', 'client.cfg': 'a = b\n' });
    const r = await render(from, {
      PROVISIONER_TOKEN: 's3cret\n',
      PROVISIONER_MONITOR_API_TOKEN: 'with "quotes": and # more',
    });
    expect(r.code, r.out).toBe(0);
    expect(readdirSync(r.to).sort()).toEqual(['choria-provisioner.yaml', 'client.cfg']);
    const yaml = readFileSync(join(r.to, 'choria-provisioner.yaml'), 'utf8');
    expect(yaml).toBe('site: lon\nworkers: 4\ntoken: "s3cret"\nmonitor_api_token: "with \\"quotes\\": and # more"\n');
    expect(parse(yaml)).toMatchObject({ token: 's3cret', monitor_api_token: 'with "quotes": and # more' });
    expect(readFileSync(join(r.to, 'client.cfg'), 'utf8')).toBe('a = b\n');
    expect(r.out).toContain('token, monitor_api_token from the Secret');
  });

  it('stops the pod when the chart configuration already sets a key of the Secret', async () => {
    const from = configMapVolume({ 'choria-provisioner.yaml': 'site: lon\nToken: plain\n' });
    const r = await render(from, { PROVISIONER_TOKEN: 's3cret' });
    expect(r.code).toBe(1);
    expect(r.out).toContain("render-config: token is both in the chart's configuration and in credentials.secretName");
  });
});

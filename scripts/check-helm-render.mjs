#!/usr/bin/env node
// Checks what `helm template` renders from deploy/helm/choria-provisioner against the provisioner
// itself (a step of scripts/check-helm): the configuration files of the ConfigMap, with the keys of
// credentials.secretName added the way the init container adds them, load without an error or a
// warning; the container's arguments name them where the init container puts them; every file
// they name (the helper, keys and certificates, the renewal client's configuration) is in a volume
// mounted in the provisioner container; the port and the probes are the configuration's monitor port.
//   node scripts/check-helm-render.mjs RENDERED.yaml       (build first: npm run build)
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { posix } from 'node:path';
import { checkChoriaSettings, parseChoriaConfig, parseProvisionerConfig } from '@choria-provisioner/core';
import { splitCommand } from '@choria-provisioner/core/internal';
import { SECRET_KEYS, addSecrets } from '../deploy/helm/choria-provisioner/files/render-config.mjs';

// the YAML parser the provisioner itself reads its configuration with
const { parseAllDocuments } = createRequire(import.meta.resolve('@choria-provisioner/core'))('yaml');

/** The problems of one rendered chart, as sentences. */
export function checkRendered(text) {
  const problems = [];
  const docs = parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter((d) => d !== null && d !== undefined);
  const deployment = docs.find((d) => d.kind === 'Deployment');
  if (deployment === undefined) return ['no Deployment rendered'];
  const pod = deployment.spec.template.spec;
  const container = pod.containers.find((c) => c.name === 'provisioner');
  const init = (pod.initContainers ?? []).find((c) => c.name === 'config');
  if (container === undefined || init === undefined) return ['no provisioner container or no config init container'];
  const within = (mounts, path) => mounts.find((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`));
  const volume = (name) => (pod.volumes ?? []).find((v) => v.name === name);
  const mounted = (what, path) => {
    if (!path.startsWith('/')) problems.push(`${what} ${path} is not an absolute path`);
    else if (within(container.volumeMounts ?? [], path) === undefined)
      problems.push(`${what} ${path} is in no volume mounted in the provisioner container`);
  };

  // the init container copies the chart's ConfigMap (from) into the directory the provisioner reads (to)
  const [node, script, from, to] = init.command ?? [];
  if (node !== 'node' || script !== `${from}/render-config.mjs`) problems.push(`init command ${init.command}`);
  const source = within(init.volumeMounts ?? [], `${from}/x`);
  const target = within(init.volumeMounts ?? [], `${to}/x`);
  const configMapName = volume(source?.name)?.configMap?.name;
  const data = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === configMapName)?.data;
  if (data === undefined) return [...problems, `the init container reads no ConfigMap the chart renders (${from})`];
  if (volume(target?.name)?.emptyDir === undefined) problems.push(`the init container writes ${to} to no emptyDir`);

  const args = container.args ?? [];
  const flag = (name) => args[args.indexOf(name) + 1] ?? '';
  const files = {};
  for (const name of ['--config', '--choria-config']) {
    const path = flag(name);
    const mount = within(container.volumeMounts ?? [], path);
    if (mount?.name !== target?.name || posix.dirname(path) !== mount?.mountPath)
      problems.push(`${name} ${path} is not in the directory the init container writes`);
    files[name] = data[posix.basename(path)];
    if (files[name] === undefined) problems.push(`${name} ${path}: the ConfigMap has no ${posix.basename(path)}`);
  }
  if (problems.length > 0) return problems;

  // every secret key the init container may be given, as a Secret holding all of them gives them
  const known = new Set(Object.values(SECRET_KEYS));
  const env = {};
  for (const e of init.env ?? []) {
    if (!known.has(e.name)) problems.push(`init container variable ${e.name} is no secret key of render-config.mjs`);
    env[e.name] = `value of ${e.name}`;
  }
  const warnings = [];
  let config;
  try {
    const { yaml } = addSecrets(files['--config'], env);
    config = parseProvisionerConfig(yaml, 'choria-provisioner.yaml', { onWarning: (w) => warnings.push(w) });
  } catch (err) {
    return [...problems, err instanceof Error ? err.message : String(err)];
  }
  problems.push(...warnings.map((w) => `warning: ${w}`));

  mounted('the helper', splitCommand(config.helper)[0] ?? '');
  for (const [key, path] of [
    ['jwt_verify_cert', config.jwtVerifyCert],
    ['jwt_signing_key', config.jwtSigningKey],
    ['jwt_signing_token', config.jwtSigningToken],
  ]) {
    // jwt_verify_cert may be a hex ed25519 key instead of a file
    if (path !== '' && !/^[0-9a-f]{64}$/i.test(path)) mounted(key, path);
  }
  const clients = [['--choria-config', files['--choria-config']]];
  if (config.renewal !== undefined) {
    const path = config.renewal.choriaConfig;
    mounted('renewal_choria_config', path);
    const text = within(container.volumeMounts ?? [], path)?.name === target?.name ? data[posix.basename(path)] : '';
    if (text === undefined)
      problems.push(`renewal_choria_config ${path}: the ConfigMap has no ${posix.basename(path)}`);
    else if (text !== '') clients.push([posix.basename(path), text]);
  }
  for (const [name, text] of clients) {
    try {
      const settings = parseChoriaConfig(text, name, { hostname: 'pod-name', env: {} });
      problems.push(...checkChoriaSettings(settings));
      for (const file of [settings.certificateFile, settings.keyFile, settings.caFile, settings.tokenFile]) {
        if (file !== undefined) mounted(`${name}: file`, file);
      }
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }

  // the monitor port: the container's, the probes' and the Service's
  const port = (container.ports ?? []).find((p) => p.name === 'monitor');
  if (port?.containerPort !== config.monitorPort)
    problems.push(`monitor_port ${config.monitorPort} is not the container port ${port?.containerPort}`);
  for (const [probe, path] of [
    ['livenessProbe', '/healthz'],
    ['readinessProbe', '/readyz'],
    ['startupProbe', '/healthz'],
  ]) {
    const get = container[probe]?.httpGet;
    if (get?.port !== 'monitor' || get?.path !== path) problems.push(`${probe} is not ${path} on the monitor port`);
  }
  for (const service of docs.filter((d) => d.kind === 'Service')) {
    if (!service.spec.ports.some((p) => p.targetPort === 'monitor'))
      problems.push(`Service ${service.metadata.name} does not reach the monitor port`);
  }
  return problems;
}

if (process.argv[1] !== undefined && import.meta.filename === process.argv[1]) {
  let failed = false;
  for (const file of process.argv.slice(2)) {
    const problems = checkRendered(readFileSync(file, 'utf8'));
    for (const p of problems) process.stderr.write(`${file}: ${p}\n`);
    if (problems.length === 0) process.stdout.write(`${file}: the provisioner accepts what the chart renders\n`);
    failed ||= problems.length > 0;
  }
  if (process.argv.length < 3) {
    process.stderr.write('usage: check-helm-render.mjs RENDERED.yaml ...\n');
    failed = true;
  }
  process.exitCode = failed ? 1 : 0;
}

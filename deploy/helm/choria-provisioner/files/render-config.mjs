// Run by the chart's init container: copies the configuration files of the chart's ConfigMap (the
// directory in argv[2], this script left out) to the pod's configuration directory (argv[3]) and
// adds to choria-provisioner.yaml the secret provisioner keys the environment carries (from
// credentials.secretName), so that they are in no ConfigMap. A key the file already sets stops the
// pod with a message: given twice, the provisioner would refuse the file anyway.
//   node render-config.mjs FROM TO
import { readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** provisioner key -> the environment variable holding its value */
export const SECRET_KEYS = {
  token: 'PROVISIONER_TOKEN',
  broker_provisioning_password: 'PROVISIONER_BROKER_PROVISIONING_PASSWORD',
  monitor_api_token: 'PROVISIONER_MONITOR_API_TOKEN',
};

/**
 * `yaml` with a `key: "value"` line added for every secret key set in `env` (one trailing newline
 * of a value dropped); a JSON string is a valid YAML double-quoted scalar. Throws when `yaml`
 * already sets one of them (keys match case-insensitively, as the provisioner reads them).
 */
export function addSecrets(yaml, env) {
  let out = yaml.endsWith('\n') || yaml === '' ? yaml : `${yaml}\n`;
  const added = [];
  for (const [key, variable] of Object.entries(SECRET_KEYS)) {
    const value = env[variable]?.replace(/\r?\n$/, '');
    if (value === undefined || value === '') continue;
    if (new RegExp(`^${key}\\s*:`, 'im').test(yaml))
      throw new Error(`${key} is both in the chart's configuration and in credentials.secretName; keep one`);
    out += `${key}: ${JSON.stringify(value)}\n`;
    added.push(key);
  }
  return { yaml: out, added };
}

function main([from, to]) {
  if (from === undefined || to === undefined) throw new Error('usage: render-config.mjs FROM TO');
  const self = basename(fileURLToPath(import.meta.url));
  // a ConfigMap volume also holds ..data and timestamped directories; its files are links into them
  const files = readdirSync(from).filter((f) => !f.startsWith('..') && f !== self && statSync(join(from, f)).isFile());
  for (const file of files) {
    let text = readFileSync(join(from, file), 'utf8');
    if (file === 'choria-provisioner.yaml') {
      const { yaml, added } = addSecrets(text, process.env);
      text = yaml;
      const names = added.length > 0 ? added.join(', ') : 'no keys';
      process.stdout.write(`choria-provisioner.yaml: ${names} from the Secret\n`);
    }
    writeFileSync(join(to, file), text, { mode: 0o640 });
  }
  process.stdout.write(`${files.join(', ')} written to ${to}\n`);
}

// run as a program (Node.js gives import.meta.url the real path of a ConfigMap's linked file)
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`render-config: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}

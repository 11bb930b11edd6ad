// ajv validators for go-choria's embedded protocol schemas (what servers validate against).
// v1 files are draft-04: ajv v8 has no draft-04 meta-schema, so `$schema`/`id` are removed and the
// rest compiled without strict mode (the keywords used mean the same in draft-07). The v2 reply
// schema's `protocol` constant is patched to the value real servers send (the upstream schema constrains it to the request's value by mistake).
import { Ajv, type ValidateFunction } from 'ajv';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

export type SchemaName = 'transport' | 'secure_request' | 'request' | 'secure_reply' | 'reply';

export function schemaValidator(version: 'v1' | 'v2', name: SchemaName): ValidateFunction {
  const schema = readVectorJson<Record<string, unknown>>(
    'schemas',
    'go-choria-embedded',
    'choria',
    'protocol',
    version,
    `${name}.json`,
  );
  delete schema['$schema'];
  delete schema['id'];
  delete schema['$id'];
  if (version === 'v2' && name === 'reply') {
    const props = schema['properties'] as Record<string, Record<string, unknown>>;
    (props['protocol'] as Record<string, unknown>)['const'] = 'io.choria.protocol.v2.reply';
  }
  return new Ajv({ strict: false, allErrors: true }).compile(schema);
}

/** Throws with ajv's errors when `json` (text) does not validate. */
export function assertValid(version: 'v1' | 'v2', name: SchemaName, json: string): void {
  const validate = schemaValidator(version, name);
  if (!validate(JSON.parse(json))) {
    throw new Error(`${version} ${name} fails the go-choria schema: ${JSON.stringify(validate.errors)}`);
  }
}

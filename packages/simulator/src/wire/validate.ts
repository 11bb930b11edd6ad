// Schema validation of secure requests and requests with go-choria's embedded schemas, which a
// real server applies to every request it receives.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { v1RequestSchema } from './schemas/v1-request.js';
import { v1SecureRequestSchema } from './schemas/v1-secure-request.js';
import { v2RequestSchema } from './schemas/v2-request.js';
import { v2SecureRequestSchema } from './schemas/v2-secure-request.js';

export interface ProtocolValidators {
  v1SecureRequest: ValidateFunction;
  v1Request: ValidateFunction;
  v2SecureRequest: ValidateFunction;
  v2Request: ValidateFunction;
}

/**
 * ajv v8 knows no draft-04 meta-schema, so `$schema`/`$id` are removed before compiling; the v1
 * documents only use keywords whose meaning did not change since draft-04.
 */
function forAjv(schema: unknown): Record<string, unknown> {
  const copy = structuredClone(schema) as Record<string, unknown>;
  delete copy['$schema'];
  delete copy['$id'];
  delete copy['id'];
  return copy;
}

export function createValidators(): ProtocolValidators {
  const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false });
  return {
    v1SecureRequest: ajv.compile(forAjv(v1SecureRequestSchema)),
    v1Request: ajv.compile(forAjv(v1RequestSchema)),
    v2SecureRequest: ajv.compile(forAjv(v2SecureRequestSchema)),
    v2Request: ajv.compile(forAjv(v2RequestSchema)),
  };
}

export function describeSchemaErrors(errors: ErrorObject[] | null | undefined): string {
  if (errors === null || errors === undefined || errors.length === 0) return 'invalid';
  return errors
    .map((e) => `${e.instancePath === '' ? '(root)' : e.instancePath} ${e.message ?? 'is invalid'}`)
    .join('; ');
}

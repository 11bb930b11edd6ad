// Checks RPC inputs against the DDL before anything is published, so a bad call fails here with a
// clear message instead of as a silent server-side decode error.
import { RpcInputError } from '../errors.js';
import { agentDdl, knownAgents } from './registry.js';
import type { DdlType } from './types.js';
import { isPlainObject } from '../../util/values.js';

/**
 * Where the server decodes an input more strictly than its DDL type says: `splay` is declared `number` but decoded into
 * an integer (1.5 fails, negative values crash the server), policy maps must map to strings.
 */
type Refinement = 'non-negative integer' | 'string map';

const SERVER_DECODING: Readonly<Record<string, Readonly<Record<string, Refinement>>>> = {
  'choria_provision#restart': { splay: 'non-negative integer' },
  'choria_provision#configure': { action_policies: 'string map', opa_policies: 'string map' },
};

// Never echo string contents: inputs include provisioning tokens and private keys.
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'string') return 'a string';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function typeProblem(type: DdlType, value: unknown): string | undefined {
  switch (type) {
    case 'string':
    case 'list':
      return typeof value === 'string' ? undefined : `must be a string, got ${describe(value)}`;
    case 'number':
    case 'float':
      return typeof value === 'number' && Number.isFinite(value)
        ? undefined
        : `must be a number, got ${describe(value)}`;
    case 'integer':
      return Number.isInteger(value) ? undefined : `must be an integer, got ${describe(value)}`;
    case 'boolean':
      return typeof value === 'boolean' ? undefined : `must be a boolean, got ${describe(value)}`;
    case 'hash':
      return isPlainObject(value) ? undefined : `must be a hash (JSON object), got ${describe(value)}`;
    case 'array':
      return Array.isArray(value) ? undefined : `must be an array, got ${describe(value)}`;
    case 'any':
      return undefined;
  }
}

function refinementProblem(refinement: Refinement, value: unknown): string | undefined {
  if (refinement === 'non-negative integer') {
    if (!Number.isInteger(value)) return `must be an integer, got ${describe(value)}`;
    return (value as number) < 0 ? `must not be negative, got ${String(value)}` : undefined;
  }
  if (!isPlainObject(value)) return `must be a hash (JSON object), got ${describe(value)}`;
  for (const [key, entry] of Object.entries(value)) {
    if (typeof entry !== 'string')
      return `must map names to strings, got ${describe(entry)} for ${JSON.stringify(key)}`;
  }
  return undefined;
}

/** Every problem with `data` for agent#action; empty when the inputs are acceptable. */
export function inputProblems(agent: string, action: string, data: Readonly<Record<string, unknown>>): string[] {
  const ddl = agentDdl(agent);
  if (ddl === undefined) return [`no DDL for agent "${agent}" (known: ${knownAgents().join(', ')})`];
  const actionDdl = ddl.actions.find((a) => a.action === action);
  const where = `${agent}#${action}`;
  if (actionDdl === undefined) {
    return [`${where}: unknown action (${agent} has ${ddl.actions.map((a) => a.action).join(', ')})`];
  }
  const problems: string[] = [];
  const refinements = Object.hasOwn(SERVER_DECODING, where) ? (SERVER_DECODING[where] ?? {}) : {};
  for (const [name, input] of Object.entries(actionDdl.input)) {
    const value = data[name];
    if (value === undefined) {
      if (!input.optional) problems.push(`${where}: input "${name}" is required`);
      continue;
    }
    const refinement = refinements[name];
    const problem = refinement !== undefined ? refinementProblem(refinement, value) : typeProblem(input.type, value);
    if (problem !== undefined) problems.push(`${where}: input "${name}" ${problem}`);
  }
  for (const name of Object.keys(data)) {
    if (!Object.hasOwn(actionDdl.input, name) && data[name] !== undefined)
      problems.push(`${where}: unknown input "${name}"`);
  }
  return problems;
}

/** Throws RpcInputError listing every problem with `data` for agent#action. */
export function validateInputs(agent: string, action: string, data: Readonly<Record<string, unknown>>): void {
  const problems = inputProblems(agent, action, data);
  if (problems.length > 0) throw new RpcInputError(problems);
}

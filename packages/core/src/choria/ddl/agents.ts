// The agent DDLs the provisioner calls, read from go-choria's own DDL files (agent/*.json) and
// checked once as this module loads, so a replaced file of the wrong shape fails at start-up with
// its name rather than at the first request.
import choriaProvisionJson from './agent/choria_provision.json' with { type: 'json' };
import rpcutilJson from './agent/rpcutil.json' with { type: 'json' };
import { DDL_TYPES, type AgentDdl, type DdlType } from './types.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `json` as an agent DDL; throws naming `file` and the first part of the wrong shape. */
export function checkedAgentDdl(json: unknown, file: string): AgentDdl {
  const wrong = (what: string): Error => new Error(`the agent DDL ${file} is not of the expected shape: ${what}`);
  if (!isRecord(json) || !isRecord(json['metadata'])) throw wrong('no metadata object');
  const meta = json['metadata'];
  if (typeof meta['name'] !== 'string' || meta['name'] === '') throw wrong('metadata.name is not a name');
  if (typeof meta['timeout'] !== 'number') throw wrong('metadata.timeout is not a number');
  const actions = json['actions'];
  if (!Array.isArray(actions)) throw wrong('actions is not a list');
  for (const [i, action] of actions.entries()) {
    if (!isRecord(action) || typeof action['action'] !== 'string') throw wrong(`actions[${i}] has no action name`);
    for (const part of ['input', 'output'] as const) {
      const fields = action[part];
      if (!isRecord(fields)) throw wrong(`${action['action']}.${part} is not an object`);
      for (const [name, field] of Object.entries(fields)) {
        if (!isRecord(field)) throw wrong(`${action['action']}.${part}.${name} is not an object`);
        const type = field['type'];
        if (type !== undefined && !DDL_TYPES.includes(type as DdlType)) {
          throw wrong(`${action['action']}.${part}.${name} has the unknown type ${JSON.stringify(type)}`);
        }
      }
    }
  }
  return json as unknown as AgentDdl;
}

export const choriaProvisionDdl: AgentDdl = checkedAgentDdl(choriaProvisionJson, 'agent/choria_provision.json');
export const rpcutilDdl: AgentDdl = checkedAgentDdl(rpcutilJson, 'agent/rpcutil.json');

// The DDLs the provisioner talks to, looked up by agent name.
import { choriaProvisionDdl, rpcutilDdl } from './agents.js';
import type { AgentDdl, DdlAction } from './types.js';

const AGENT_DDLS: ReadonlyMap<string, AgentDdl> = new Map([
  [choriaProvisionDdl.metadata.name, choriaProvisionDdl],
  [rpcutilDdl.metadata.name, rpcutilDdl],
]);

/** go-choria uses 10 s when a DDL declares timeout 0. */
export const DEFAULT_AGENT_TIMEOUT_MS = 10_000;

export function knownAgents(): string[] {
  return [...AGENT_DDLS.keys()];
}

export function agentDdl(agent: string): AgentDdl | undefined {
  return AGENT_DDLS.get(agent);
}

export function actionDdl(agent: string, action: string): DdlAction | undefined {
  return agentDdl(agent)?.actions.find((a) => a.action === action);
}

/** A DDL's timeout in milliseconds; 0 (or less) means go-choria's default of 10 s. */
export function ddlTimeoutMs(ddl: AgentDdl): number {
  return ddl.metadata.timeout > 0 ? ddl.metadata.timeout * 1000 : DEFAULT_AGENT_TIMEOUT_MS;
}

/** The agent's DDL timeout in milliseconds (0 -> 10 s); throws for an agent without a DDL. */
export function actionTimeoutMs(agent: string): number {
  const ddl = agentDdl(agent);
  if (ddl === undefined) throw new Error(`no DDL for agent "${agent}" (known: ${knownAgents().join(', ')})`);
  return ddlTimeoutMs(ddl);
}

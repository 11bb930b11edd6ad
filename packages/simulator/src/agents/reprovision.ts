// `choria_provision#reprovision` as a provisioned go-choria server (v0.30.2) answers it on its
// fleet's collective: the only action of the agent that works outside provisioning mode. The server
// checks its RPC authorization, then the token; it rewrites its configuration to provisioning mode
// and restarts after 2 to 11 s. Whether it comes back in provisioning mode is the fleet's setting
// (its provisioning JWT made with --default, or the choria security provider); a server that does
// not come back is stranded, which the simulator records as a violation of the provisioner that
// sent it.
import type { JValue } from '../wire/gojson.js';
import { errorReply, okReply, StatusCode, type RpcReply } from './mcorpc.js';

/** How the provisioned servers of a fleet answer `reprovision` (FleetOptions.reprovision). */
export interface ReprovisionBehaviour {
  /** the collective the provisioned servers join */
  readonly collective: string;
  /** back in provisioning mode after the restart (else stranded) */
  readonly comesBack: boolean;
  /** the caller may call choria_provision#reprovision (else go-choria's authorization refusal) */
  readonly authorized: boolean;
}

export const NOT_AUTHORIZED = 'You are not authorized to call this agent or action';
export const INCORRECT_TOKEN = 'Incorrect provision token supplied';

/** The answer to one request on the fleet's collective, and the restart it starts (seconds), if any. */
export function answerOnFleet(
  behaviour: ReprovisionBehaviour,
  agent: string,
  action: string,
  data: JValue | undefined,
  nodeToken: string,
  random: (bound: number) => number,
): { reply: RpcReply; restartAfterS?: number } {
  if (agent !== 'choria_provision' || action !== 'reprovision')
    return { reply: errorReply(action, StatusCode.UnknownAction, `Unknown action ${action} for agent ${agent}`) };
  if (!behaviour.authorized) return { reply: errorReply(action, StatusCode.Aborted, NOT_AUTHORIZED) };
  const token = data?.t === 'obj' ? data.v.find(([k]) => k === 'token')?.[1] : undefined;
  const given = token?.t === 'str' ? token.v : '';
  if (nodeToken !== '' && given !== nodeToken)
    return { reply: errorReply(action, StatusCode.Aborted, INCORRECT_TOKEN) };
  const restartAfterS = random(10) + 2;
  return { reply: okReply(action, { message: `Restarting after ${restartAfterS}s` }), restartAfterS };
}

// `choria-provisioner pause|resume|release|retry|renewals resume`: the control requests of a running provisioner's
// monitor port. The token comes from a file or the environment, never the command line (where
// every local user could read it in the process list).
import { readFileSync } from 'node:fs';
import { visibleStrings } from '@choria-provisioner/core';
import { EXIT, type CliIO } from '../io.js';
import { monitorUrl } from './monitor-url.js';

export const TOKEN_ENV = 'CHORIA_PROVISIONER_API_TOKEN';

export interface ControlOptions {
  url: string;
  action: 'pause' | 'resume' | 'resume-renewals' | 'release' | 'retry';
  identity?: string;
  site?: string;
  tokenFile?: string;
  env?: NodeJS.ProcessEnv;
}

/** The site's monitor_api_token from --token-file, else the environment; '' when neither has one. */
export function tokenOf(opts: { tokenFile?: string | undefined; env?: NodeJS.ProcessEnv | undefined }): string {
  if (opts.tokenFile !== undefined) return readFileSync(opts.tokenFile, 'utf8').trim();
  return (opts.env ?? process.env)[TOKEN_ENV]?.trim() ?? '';
}

/** The token as tokenOf reads it; undefined (said on stderr) when the token file cannot be read. */
export function readTokenOrSay(
  opts: { tokenFile?: string | undefined; env?: NodeJS.ProcessEnv | undefined },
  io: CliIO,
): string | undefined {
  try {
    return tokenOf(opts);
  } catch (err) {
    io.err(
      `choria-provisioner: could not read the token file ${opts.tokenFile ?? ''}: ` +
        `${err instanceof Error ? err.message : String(err)}`,
    );
    return undefined;
  }
}

export async function controlCommand(opts: ControlOptions, io: CliIO): Promise<number> {
  const token = readTokenOrSay(opts, io);
  if (token === undefined) return EXIT.usage;
  const path =
    opts.action === 'pause' || opts.action === 'resume'
      ? `/${opts.action}`
      : opts.action === 'resume-renewals'
        ? '/renewals/resume'
        : `/nodes/${encodeURIComponent(opts.identity ?? '')}/${opts.action}`;
  const url = monitorUrl(opts.url, `${path}${opts.site !== undefined ? `?site=${encodeURIComponent(opts.site)}` : ''}`);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: token === '' ? {} : { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5000),
    });
  } catch (err) {
    io.err(`choria-provisioner: could not reach ${url}: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT.runtime;
  }
  // what the port says may quote a node's identity: shown with visible escapes
  const body = visibleStrings(await res.json().catch(() => ({}))) as {
    error?: string;
    sites?: { site: string; result: string }[];
  };
  const said = (body.sites ?? []).map((s) => `site ${s.site === '' ? '(none)' : s.site}: ${s.result}`);
  if (!res.ok) {
    io.err(`choria-provisioner: ${opts.action} refused (${res.status}): ${body.error ?? res.statusText}`);
    for (const line of said) io.err(line);
    return EXIT.runtime;
  }
  for (const line of said) io.out(line);
  return EXIT.ok;
}

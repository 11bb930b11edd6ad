// `choria-provisioner status`: fetches /status from a running provisioner and prints it as tables.
// A site that sets monitor_api_token lists its nodes only to its token, which comes from
// --token-file or the environment as for the control commands.
import {
  visibleStrings,
  type CoordinationStatus,
  type MemberView,
  type ProvisionerStatus,
} from '@choria-provisioner/core';
import { EXIT, type CliIO } from '../io.js';
import { TOKEN_ENV, readTokenOrSay } from './control.js';
import { monitorUrl } from './monitor-url.js';

/** What this command reads of a site in /status: the core's own type, as the provisioner serves it. */
type SiteStatus = Pick<
  ProvisionerStatus,
  'site' | 'leader' | 'paused' | 'queue' | 'busyWorkers' | 'workers' | 'hosts'
> &
  Partial<Pick<ProvisionerStatus, 'coordination' | 'history' | 'hostCounts' | 'hostsNeedToken' | 'renewals'>>;

function isSiteStatus(v: unknown): v is SiteStatus {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o['site'] === 'string' && typeof o['paused'] === 'boolean' && Array.isArray(o['hosts']);
}

export function formatTable(rows: string[][]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function roleOf(c: CoordinationStatus | undefined): string {
  if (c === undefined) return '';
  if (c.effective === 'lock_only') return ', active/active lock-only (no membership)';
  if (c.effective !== 'active_active') return '';
  const m = c.membership;
  return m === undefined
    ? ', active/active'
    : `, active/active member of "${m.group}" (${m.state}, ${m.members.length} members, ` +
        `${c.foreignNodes ?? 0} nodes seen owned elsewhere)`;
}

function historyLine(h: ProvisionerStatus['history'] | undefined): string | undefined {
  if (h === undefined) return undefined;
  const pending = h.pendingWrites > 0 ? `, ${h.pendingWrites} not yet written` : '';
  if (h.store === 'kv') {
    const ttl = h.ttlMs === undefined || h.ttlMs === 0 ? 'no age limit' : `kept ${Math.round(h.ttlMs / 3_600_000)} h`;
    const where = h.connection === 'choria' ? ' in the choria account' : '';
    return (
      `history: bucket ${h.bucket ?? '?'}${where} (shared, ${ttl}${h.readOnly === true ? ', read only' : ''}), ` +
      `${h.nodes} nodes${pending}`
    );
  }
  return `history: this process only, ${h.nodes} nodes${h.reason !== undefined ? ` (${h.reason})` : ''}`;
}

/** The site's credential renewals: a line of counts, then a table of the nodes listed. */
function renewalLines(r: ProvisionerStatus['renewals']): string[] {
  if (r === undefined) return [];
  const c = r.counts;
  const out = [
    `renewals: ${c.scheduled} scheduled, ${c.due} due, ${c['in-flight']} in flight, ${c.failed} failed, ` +
      `${c['not-renewable']} not renewable` +
      (r.stopped !== undefined ? `; STOPPED until resumed (choria-provisioner renewals resume): ${r.stopped}` : ''),
  ];
  const rows = [['NODE', 'RENEWAL', 'AT', 'EXPIRES', 'NOTE']];
  for (const e of [...r.failed, ...r.inFlight, ...r.next, ...r.notRenewable])
    rows.push([
      e.identity,
      e.state,
      e.dueAt ?? e.sentAt ?? '',
      e.expiresAt,
      e.reason ?? (e.sentBy !== undefined ? `sent by ${e.sentBy}` : ''),
    ]);
  if (rows.length > 1) out.push(formatTable(rows));
  return out;
}

export function formatStatus(body: unknown): string {
  const sites =
    (typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['sites'] : undefined) ?? [];
  if (!Array.isArray(sites)) throw new Error('status reply has no "sites" list');
  const out: string[] = [];
  for (const s of sites) {
    if (!isSiteStatus(s)) throw new Error('status reply has a malformed site entry');
    const leader = s.leader === undefined ? '' : s.leader ? ', leader' : ', standby';
    const hosts =
      s.hostsNeedToken === true ? Object.values(s.hostCounts ?? {}).reduce((a, n) => a + n, 0) : s.hosts.length;
    out.push(
      `site ${s.site === '' ? '(none)' : s.site}: ${s.paused ? 'paused' : 'running'}${leader}` +
        `${roleOf(s.coordination)}, queue ${s.queue}, busy workers ${s.busyWorkers}/${s.workers}, hosts ${hosts}`,
    );
    if (s.hostsNeedToken === true)
      out.push(
        `nodes not listed: the site lists them only with its monitor_api_token (--token-file FILE or ${TOKEN_ENV})`,
      );
    const history = historyLine(s.history);
    if (history !== undefined) out.push(history);
    out.push(...renewalLines(s.renewals));
    const members = s.coordination?.membership?.members ?? [];
    if (members.length > 0) {
      const rows = [['MEMBER', 'OWNED', 'QUEUED', 'FINISHED', 'LAST HEARD']];
      // two processes sharing one identity are told apart by their process id
      const shared = (m: MemberView): boolean => members.filter((x) => x.instance === m.instance).length > 1;
      for (const m of members)
        rows.push([
          `${shared(m) ? m.member : m.instance}${m.self ? ' (this)' : ''}`,
          String(m.owned),
          String(m.queued),
          String(m.provisioned),
          m.self ? '-' : `${(m.lastSeenMs / 1000).toFixed(1)}s ago`,
        ]);
      out.push(formatTable(rows));
    }
    if (s.hosts.length > 0) {
      const rows = [['IDENTITY', 'STATE', 'STEP', 'ATTEMPTS', 'BY', 'UPDATED', 'LAST ERROR']];
      for (const h of s.hosts)
        rows.push([
          h.identity,
          h.state,
          h.step ?? '',
          String(h.attempts),
          h.instance ?? '',
          h.updatedAt ?? '',
          h.lastError ?? '',
        ]);
      out.push(formatTable(rows));
    }
    out.push('');
  }
  return out.join('\n');
}

export interface StatusOptions {
  url: string;
  json: boolean;
  tokenFile?: string | undefined;
  env?: NodeJS.ProcessEnv;
}

export async function statusCommand(opts: StatusOptions, io: CliIO): Promise<number> {
  const url = monitorUrl(opts.url, '/status');
  const token = readTokenOrSay(opts, io);
  if (token === undefined) return EXIT.usage;
  let body: unknown;
  try {
    const res = await fetch(url, {
      headers: token === '' ? {} : { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) {
      // the port says why (a Host it does not know, a bad query): shown with visible escapes
      const why = visibleStrings(await res.json().catch(() => ({}))) as { error?: unknown };
      io.err(
        `choria-provisioner: ${url} answered ${res.status} ${res.statusText}` +
          `${typeof why.error === 'string' ? `: ${why.error}` : ''}`,
      );
      return EXIT.runtime;
    }
    // identities, errors and versions come from nodes: shown with visible escapes
    body = visibleStrings(await res.json());
  } catch (err) {
    io.err(`choria-provisioner: could not fetch ${url}: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT.runtime;
  }
  if (opts.json) {
    io.out(JSON.stringify(body, null, 2));
    return EXIT.ok;
  }
  try {
    io.out(formatStatus(body));
  } catch (err) {
    io.err(`choria-provisioner: ${url}: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT.runtime;
  }
  return EXIT.ok;
}

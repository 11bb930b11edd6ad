// NATS control subjects, so a fleet running in another process (the bin) can be inspected and
// stopped: choria.simulator.<name>.report and choria.simulator.<name>.stop.
import type { Msg, NatsConnection } from 'nats';
import type { FleetReport, FleetSummary } from './report.js';

export interface ReportRequest {
  /** totals and fleet-wide violations only */
  summary?: boolean;
  offset?: number;
  limit?: number;
  identities?: string[];
}

export interface ControllableFleet {
  readonly name: string;
  summary(): FleetSummary;
  report(opts: { offset?: number; limit?: number; identities?: string[] }): FleetReport;
  stop(): Promise<void>;
}

export function controlSubjects(name: string): { report: string; stop: string } {
  return { report: `choria.simulator.${name}.report`, stop: `choria.simulator.${name}.stop` };
}

/** Parses a report request body; an empty body asks for the whole report. */
export function parseReportRequest(data: Uint8Array): ReportRequest | string {
  const text = Buffer.from(data).toString('utf8').trim();
  if (text === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return 'the report request body must be JSON, e.g. {"summary":true}';
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'the report request body must be a JSON object';
  const o = v as Record<string, unknown>;
  const req: ReportRequest = {};
  if (o['summary'] !== undefined) {
    if (typeof o['summary'] !== 'boolean') return 'summary must be a boolean';
    req.summary = o['summary'];
  }
  for (const k of ['offset', 'limit'] as const) {
    const n = o[k];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) return `${k} must be a non-negative integer`;
    req[k] = n;
  }
  const ids = o['identities'];
  if (ids !== undefined) {
    if (!Array.isArray(ids) || !ids.every((x): x is string => typeof x === 'string'))
      return 'identities must be an array of strings';
    req.identities = ids;
  }
  return req;
}

export function attachControl(fleet: ControllableFleet, nc: NatsConnection): void {
  const subjects = controlSubjects(fleet.name);
  const respond = (msg: Msg, doc: unknown): void => {
    if (msg.reply !== undefined && msg.reply !== '') msg.respond(JSON.stringify(doc));
  };
  nc.subscribe(subjects.report, {
    callback: (_err, msg) => {
      const req = parseReportRequest(msg.data);
      if (typeof req === 'string') {
        respond(msg, { error: req });
        return;
      }
      let text: string;
      if (req.summary === true) {
        text = JSON.stringify(fleet.summary());
      } else {
        const opts: { offset?: number; limit?: number; identities?: string[] } = {};
        if (req.offset !== undefined) opts.offset = req.offset;
        if (req.limit !== undefined) opts.limit = req.limit;
        if (req.identities !== undefined) opts.identities = req.identities;
        text = JSON.stringify(fleet.report(opts));
      }
      const max = nc.info?.max_payload ?? 1024 * 1024;
      if (Buffer.byteLength(text) > max) {
        text = JSON.stringify({
          ...fleet.summary(),
          truncated: true,
          error:
            `the report is larger than the broker's max_payload of ${max} bytes: ` +
            `ask for pages with {"offset":0,"limit":100} or totals with {"summary":true}`,
        });
      }
      if (msg.reply !== undefined && msg.reply !== '') msg.respond(text);
    },
  });
  nc.subscribe(subjects.stop, {
    callback: (_err, msg) => {
      respond(msg, { stopping: true, summary: fleet.summary() });
      void nc
        .flush()
        .catch(() => undefined)
        .then(() => fleet.stop());
    },
  });
}

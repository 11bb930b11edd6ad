// Shared helpers of the election tests: the bucket stream from the vectors, a capturing logger, polling.
import { Writable } from 'node:stream';
import type { NatsConnection } from 'nats';
import winston from 'winston';
import type { Logger } from 'winston';
import { readVectorJson } from '@choria-provisioner/test-support/vectors';

interface StreamVector {
  request_subject: string;
  config: Record<string, unknown> & { name: string };
}

export function electionStreamVector(): StreamVector {
  return readVectorJson<StreamVector>('crypto', 'election-stream.json');
}

/** Creates the election bucket stream (from election-stream.json) in an account that has JetStream. */
export async function createElectionStream(
  nc: NatsConnection,
  overrides: Record<string, unknown> = { max_age: 5_000_000_000 },
): Promise<void> {
  const v = electionStreamVector();
  const config = { ...v.config, ...overrides };
  const subject = `$JS.API.STREAM.CREATE.${config.name}`;
  const reply = await nc.request(subject, new TextEncoder().encode(JSON.stringify(config)), { timeout: 5_000 });
  const parsed = JSON.parse(new TextDecoder().decode(reply.data)) as { error?: { description?: string } };
  if (parsed.error !== undefined)
    throw new Error(`could not create stream ${config.name}: ${parsed.error.description ?? 'unknown error'}`);
}

export interface LogEntry {
  level: string;
  message: string;
  [field: string]: unknown;
}

/** A winston logger that keeps every entry in memory. */
export function capturingLogger(): { logger: Logger; entries: LogEntry[] } {
  const entries: LogEntry[] = [];
  const sink = new Writable({
    objectMode: true,
    write(info: LogEntry, _enc, done) {
      entries.push(info);
      done();
    },
  });
  const logger = winston.createLogger({
    level: 'debug',
    transports: [new winston.transports.Stream({ stream: sink })],
  });
  return { logger, entries };
}

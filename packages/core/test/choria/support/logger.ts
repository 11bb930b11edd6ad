// A winston logger whose messages are kept in memory for assertions.
import { Writable } from 'node:stream';
import winston, { type Logger } from 'winston';

export interface CapturedLog {
  readonly logger: Logger;
  /** "level: message" per entry */
  readonly lines: string[];
  text(): string;
}

export function captureLogger(level = 'debug'): CapturedLog {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        const entry = JSON.parse(line) as { level: string; message: string };
        lines.push(`${entry.level}: ${entry.message}`);
      }
      done();
    },
  });
  const logger = winston.createLogger({
    level,
    format: winston.format.json(),
    transports: [new winston.transports.Stream({ stream })],
  });
  return { logger, lines, text: () => lines.join('\n') };
}

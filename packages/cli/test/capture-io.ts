// A CliIO that keeps what a command printed, for the CLI's tests.
import type { CliIO } from '../src/io.js';

export function capture(): CliIO & { stdout: string; stderr: string } {
  const io = {
    stdout: '',
    stderr: '',
    out(t: string) {
      io.stdout += t + '\n';
    },
    err(t: string) {
      io.stderr += t + '\n';
    },
  };
  return io;
}

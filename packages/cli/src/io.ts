// Where the CLI writes: injectable so commands can be tested in-process.
export interface CliIO {
  out(text: string): void;
  err(text: string): void;
}

export const processIO: CliIO = {
  out: (t) => void process.stdout.write(t.endsWith('\n') ? t : t + '\n'),
  err: (t) => void process.stderr.write(t.endsWith('\n') ? t : t + '\n'),
};

/** Documented exit codes (README "Exit codes"). */
export const EXIT = {
  ok: 0,
  /** configuration or validation problems */
  config: 1,
  /** command line usage errors */
  usage: 2,
  /** runtime failure: could not start (monitor port, pid file, fatal election error) */
  runtime: 3,
} as const;

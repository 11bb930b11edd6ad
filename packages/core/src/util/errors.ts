// The base of every error class of the library: `name` is the class's own name (so logs and
// `String(err)` say `StepFailedError: ...`, not `Error: ...`), and `cause` is passed through.
//
// Every error also has a public message: what may be shown to anyone who can read the monitor
// port (/status, /nodes, the status page) and the node history. It is the provisioner's own
// wording, never text quoted from a helper's output or echoed by a node. It is the message itself
// unless the error quotes such text, in which case the error words the public message apart;
// publicMessageOf is the one place that reads it.

export interface ProvisionerErrorOptions extends ErrorOptions {
  /** the message without the foreign text it quotes (default: the message) */
  readonly publicMessage?: string;
}

export class ProvisionerError extends Error {
  /** what may be shown on the monitor port and kept in the node history */
  readonly publicMessage: string;

  constructor(message: string, options?: ProvisionerErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.publicMessage = options?.publicMessage ?? message;
  }
}

/**
 * What an error may show on the monitor port: its public message when it has one (every
 * ProvisionerError), else its message (errors of Node and of libraries, worded by them); for
 * anything else thrown, its text.
 */
export function publicMessageOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const own = (err as { publicMessage?: unknown }).publicMessage;
  return typeof own === 'string' ? own : err.message;
}

/** The two texts of a failure: for the monitor port and the log above debug, and in full for the debug log. */
export interface FailureTexts {
  /** the public message */
  readonly message: string;
  /** the full message, when it says more than the public one (for the log at debug level) */
  readonly detail: string | undefined;
}

/** Both texts of `err`, each passed through `mask` (which blanks the secrets the caller knows of). */
export function failureTexts(err: unknown, mask: (text: string) => string = (text) => text): FailureTexts {
  const message = mask(publicMessageOf(err));
  const full = mask(err instanceof Error ? err.message : String(err));
  return { message, detail: full === message ? undefined : full };
}

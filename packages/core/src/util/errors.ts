// The base of every error class of the library: `name` is the class's own name (so logs and
// `String(err)` say `StepFailedError: ...`, not `Error: ...`), and `cause` is passed through.
export class ProvisionerError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

// The helper contract as types. Keys are snake_case exactly as on the wire so a
// request or reply can be compared with, or replayed from, what the Go provisioner exchanges.

/** `csr` of the request (features.pki): the node's CSR, public key and key directory. */
export interface HelperCsr {
  readonly csr: string;
  readonly public_key: string;
  readonly ssldir: string;
}

/** `ed25519_pubkey` of the request (features.ed25519): key, directory and verified nonce signature. */
export interface HelperEd25519PubKey {
  readonly public_key: string;
  readonly directory: string;
  readonly signature: string;
}

/**
 * The verified provisioning-token claims handed to the helper. They are
 * serialised in their own key order, which the token verifier produces in Go struct order.
 */
export interface HelperJwtClaims {
  readonly cht?: string;
  readonly chs?: boolean;
  readonly chu?: string;
  readonly chsrv?: string;
  readonly chpd?: boolean;
  readonly chrd?: string;
  readonly chf?: string;
  readonly chusr?: string;
  readonly chpwd?: string;
  readonly extensions?: Readonly<Record<string, unknown>> | null;
  readonly ou?: string;
  readonly v2?: boolean;
  readonly update?: boolean;
  readonly purpose?: string;
  readonly [claim: string]: unknown;
}

/** What the helper reads on stdin. Disabled features are `null`. */
export interface HelperRequest {
  readonly identity: string;
  readonly csr: HelperCsr | null;
  readonly ed25519_pubkey: HelperEd25519PubKey | null;
  /** The raw `rpcutil#inventory` reply as a JSON *string*; helpers parse it a second time. */
  readonly inventory: string;
  readonly jwt: HelperJwtClaims | null;
}

/** The server-token permission flags a helper may grant. */
export interface HelperServerPermissions {
  readonly submission?: boolean;
  readonly streams?: boolean;
  readonly governor?: boolean;
  readonly service_host?: boolean;
}

/** `server_claims` of the reply: only the fields the provisioner uses. */
export interface HelperServerClaims {
  readonly collectives?: readonly string[];
  readonly ou?: string;
  /** Absolute Unix time in seconds (not a relative duration). */
  readonly exp?: number;
  readonly pub_subjects?: readonly string[];
  readonly permissions?: HelperServerPermissions;
}

/** What the helper prints on stdout. Every key is optional. */
export interface HelperReply {
  readonly defer?: boolean;
  readonly shutdown?: boolean;
  readonly msg?: string;
  readonly key?: string;
  readonly certificate?: string;
  readonly ca?: string;
  readonly ssldir?: string;
  readonly server_claims?: HelperServerClaims;
  readonly configuration?: Readonly<Record<string, string>>;
  readonly action_policies?: Readonly<Record<string, string>>;
  readonly opa_policies?: Readonly<Record<string, string>>;
  readonly upgrade?: string;
}

/** A successful helper run: the validated reply, the (bounded) stderr to log, and its duration. */
export interface HelperResult {
  readonly reply: HelperReply;
  readonly stderr: string;
  readonly durationMs: number;
}

export interface HelperRunOptions {
  /** The node being provisioned; named in every error. */
  readonly identity: string;
  /** Aborts the run (the helper process group is killed). */
  readonly signal?: AbortSignal;
}

/** Anything that can answer a helper request: a process per request, a pool, or a function. */
export interface HelperRunner {
  run(req: HelperRequest, opts: HelperRunOptions): Promise<HelperResult>;
  /** Releases processes; runs after close() fail with an `aborted` HelperError. */
  close(): Promise<void>;
  /**
   * Kills every helper process at once, synchronously: the last resort of a process that is about
   * to die of an uncaught error, when close() can no longer run.
   */
  killNow?(): void;
  /**
   * Starts now what would otherwise start at the first request (a pool's processes, the process
   * helpers' spawner); `notice` hears, once, anything about that worth a log line.
   */
  warmUp?(notice?: (n: HelperNotice) => void): void;
}

/** Something a helper runner tells the operator about itself, such as which spawner starts the helpers. */
export interface HelperNotice {
  readonly level: 'info' | 'warn';
  readonly message: string;
}

/** An in-process helper for embedding; its return value is validated like helper stdout. */
export type HelperFunction = (req: HelperRequest, ctx: { readonly signal: AbortSignal }) => unknown;

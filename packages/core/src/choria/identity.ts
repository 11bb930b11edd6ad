// The identity rule: what a node's Choria identity must look like before the provisioner lists,
// queues, records or sends anything for it. Anyone on the provisioning account can claim any
// identity, so every identity is checked once where it enters (a lifecycle event, a discovery
// reply, any other reply's sender, the control API, a record of the shared history; a peer's
// coordination message naming one is refused whole) and carried as a NodeIdentity from there.
//
// The rule follows what the identity becomes. It is the last part of the node's request subject
// (`provisioning.node.<identity>`) and of its history key, so it is at most the length of a DNS
// name, which keeps every subject built from it far below the broker's control-line limit (4,096
// bytes by default in nats-server and the Choria Broker; a longer one makes the broker close the
// connection). It holds only what host and certificate names use: letters, digits, `-` and `_`,
// in labels joined by single dots. So no wildcard (`*`, `>`), no space or control character, no
// empty subject token, and no `/`, which go-choria would read as a regular expression when the
// identity is used as a discovery filter.
import type { Logger } from 'winston';
import { ProtocolError } from './errors.js';
import { visibleText } from '../util/visible-text.js';
import { LogBudget } from '../util/log-budget.js';

/** A node identity that passed the identity rule. */
export type NodeIdentity = string & { readonly __nodeIdentity: true };

/** The longest identity: a DNS name's 253 characters. */
export const MAX_IDENTITY_LENGTH = 253;

const LABEL_CHAR = /^[A-Za-z0-9_-]$/;
const IDENTITY = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

/** Why `text` is not a node identity, in words that quote none of it; undefined when it is one. */
export function whyNotIdentity(text: string): string | undefined {
  if (text.length <= MAX_IDENTITY_LENGTH && IDENTITY.test(text)) return undefined;
  if (text === '') return 'it is empty';
  if (text.length > MAX_IDENTITY_LENGTH)
    return `it is ${text.length} characters long, more than ${MAX_IDENTITY_LENGTH}`;
  let labelLength = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '.') {
      if (labelLength === 0) return `it has an empty label at position ${i} (a leading, trailing or doubled dot)`;
      labelLength = 0;
    } else if (LABEL_CHAR.test(c)) {
      labelLength++;
    } else {
      const code = text.codePointAt(i) ?? 0;
      const hex = code.toString(16).toUpperCase().padStart(4, '0');
      return `it holds U+${hex} at position ${i}: only letters, digits, "-", "_" and dots between labels are allowed`;
    }
  }
  return 'it ends with a dot';
}

/** The identity `text` as a NodeIdentity, or undefined when it fails the rule. */
export function asNodeIdentity(text: unknown): NodeIdentity | undefined {
  return typeof text === 'string' && whyNotIdentity(text) === undefined ? (text as NodeIdentity) : undefined;
}

/** A text from outside that may fail the identity rule, quoted, cut short and escaped (for logs and messages). */
export function shownIdentity(text: string, max = 64): string {
  const cut = text.length > max ? `${text.slice(0, max)}…` : text;
  return `"${visibleText(cut)}"${text.length > max ? ` (${text.length} characters)` : ''}`;
}

/** An identity failed the rule where it entered. */
export class IdentityRefusedError extends ProtocolError {
  constructor(
    readonly text: string,
    readonly why: string,
  ) {
    super(`identity ${shownIdentity(text)} is refused: ${why}`);
  }
}

/** The identity `text` as a NodeIdentity; throws IdentityRefusedError when it fails the rule. */
export function nodeIdentity(text: string): NodeIdentity {
  const why = whyNotIdentity(text);
  if (why !== undefined) throw new IdentityRefusedError(text, why);
  return text as NodeIdentity;
}

/** Where a refused identity came from: the label of the refusals metric. */
export type IdentitySource = 'event' | 'discovery' | 'reply' | 'control' | 'history';

const FROM: Readonly<Record<IdentitySource, string>> = {
  event: 'a lifecycle event',
  discovery: 'a discovery reply',
  reply: 'the sender of a reply',
  control: 'a control request',
  history: 'a record of the shared history',
};

/**
 * Where identities that fail the rule go: every one is counted, and logged (escaped, cut short)
 * within the log's budget (util/log-budget.ts): a sender of thousands writes a few lines and a sum.
 */
export class RefusedIdentities {
  readonly #budget: LogBudget;
  readonly #counters = new Set<(source: IdentitySource) => void>();

  constructor(logger: Logger) {
    this.#budget = new LogBudget(logger);
  }

  /** Calls `count` for every refusal from now on (a site's metric); returns the undo. */
  onRefused(count: (source: IdentitySource) => void): () => void {
    this.#counters.add(count);
    return () => this.#counters.delete(count);
  }

  /** `text` failed the rule at `source`, for `why`. */
  refuse(text: string, why: string, source: IdentitySource): void {
    for (const count of this.#counters) count(source);
    const what = `the node identity ${shownIdentity(text)} from ${FROM[source]}`;
    this.#budget.warn(
      'refused-identity',
      `Refused ${what}: ${why}; nothing is listed, queued, recorded or sent for it`,
    );
  }

  /** Writes the sums of what the log's budget left out so far (a stop). */
  flushLog(): void {
    this.#budget.flush();
  }

  /** The identity of `text`, or undefined after refusing it. */
  admit(text: string, source: IdentitySource): NodeIdentity | undefined {
    const why = whyNotIdentity(text);
    if (why === undefined) return text as NodeIdentity;
    this.refuse(text, why, source);
    return undefined;
  }
}

// Shape of a go-choria agent DDL (JSON form), as far as the provisioner uses it.

/** DDL input/output types known to go-choria. */
export const DDL_TYPES = ['string', 'number', 'integer', 'float', 'boolean', 'hash', 'array', 'list', 'any'] as const;
export type DdlType = (typeof DDL_TYPES)[number];

export interface DdlInput {
  readonly prompt: string;
  readonly description: string;
  readonly type: DdlType;
  readonly default?: unknown;
  readonly optional: boolean;
  readonly validation?: string;
  readonly maxlength?: number;
}

export interface DdlOutput {
  readonly description: string;
  readonly display_as: string;
  readonly type?: DdlType;
  readonly default?: unknown;
}

export interface DdlAggregate {
  readonly function: string;
  readonly args: readonly unknown[];
}

export interface DdlAction {
  readonly action: string;
  readonly input: Readonly<Record<string, DdlInput>>;
  readonly output: Readonly<Record<string, DdlOutput>>;
  readonly display: string;
  readonly description: string;
  readonly aggregate?: readonly DdlAggregate[];
}

export interface DdlMetadata {
  readonly name: string;
  readonly description: string;
  readonly author: string;
  readonly license: string;
  readonly version: string;
  readonly url: string;
  /** seconds; 0 means the go-choria default of 10 s */
  readonly timeout: number;
}

export interface AgentDdl {
  readonly $schema: string;
  readonly metadata: DdlMetadata;
  readonly actions: readonly DdlAction[];
}

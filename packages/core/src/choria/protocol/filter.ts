// Request filters. Every category is always sent as an array: the v1 schema
// requires fact, cf_class, identity and compound, and Go always sends agent too.
import { ProtocolError } from '../errors.js';
import { isJsonObject } from './encoding.js';

export type FactOperator = '>=' | '<=' | '<' | '>' | '!=' | '==' | '=~';

export const FACT_OPERATORS: readonly FactOperator[] = ['>=', '<=', '<', '>', '!=', '==', '=~'];

export interface FactFilter {
  readonly fact: string;
  readonly operator: FactOperator;
  readonly value: string;
}

export interface CompoundFilter {
  readonly expr: string;
}

export interface Filter {
  readonly fact: readonly FactFilter[];
  readonly cf_class: readonly string[];
  readonly agent: readonly string[];
  readonly identity: readonly string[];
  readonly compound: ReadonlyArray<readonly CompoundFilter[]>;
}

export function emptyFilter(): Filter {
  return { fact: [], cf_class: [], agent: [], identity: [], compound: [] };
}

/** Builds a complete filter from the categories given; missing ones become empty arrays. */
export function buildFilter(parts: Partial<Filter> = {}): Filter {
  return {
    fact: [...(parts.fact ?? [])],
    cf_class: [...(parts.cf_class ?? [])],
    agent: [...(parts.agent ?? [])],
    identity: [...(parts.identity ?? [])],
    compound: (parts.compound ?? []).map((inner) => [...inner]),
  };
}

/** The only filter the provisioner uses: nodes that have `agent` loaded (and optionally are one of `identities`). */
export function agentFilter(agent: string, identities: readonly string[] = []): Filter {
  return buildFilter({ agent: [agent], identity: identities });
}

/** Key order matters when reproducing Go's bytes: fact, cf_class, agent, identity, compound. */
export function filterToJson(filter: Filter): Record<string, unknown> {
  return {
    fact: filter.fact.map((f) => ({ fact: f.fact, operator: f.operator, value: f.value })),
    cf_class: filter.cf_class,
    agent: filter.agent,
    identity: filter.identity,
    compound: filter.compound.map((inner) => inner.map((c) => ({ expr: c.expr }))),
  };
}

function stringArray(value: unknown, key: string, what: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string')) {
    throw new ProtocolError(`${what}: filter "${key}" must be an array of strings`);
  }
  return value;
}

/** Parses a received filter; `required` lists the categories the schema demands. */
export function parseFilter(value: unknown, what: string): Filter {
  if (!isJsonObject(value)) throw new ProtocolError(`${what}: filter must be an object`);
  for (const key of ['fact', 'cf_class', 'identity', 'compound']) {
    if (!Array.isArray(value[key])) throw new ProtocolError(`${what}: filter "${key}" must be an array`);
  }
  const facts = (value['fact'] as unknown[]).map((f): FactFilter => {
    if (!isJsonObject(f)) throw new ProtocolError(`${what}: fact filters must be objects`);
    const { fact, operator, value: v } = f;
    if (typeof fact !== 'string' || fact === '' || typeof v !== 'string' || v === '') {
      throw new ProtocolError(`${what}: fact filters need non-empty "fact" and "value" strings`);
    }
    if (typeof operator !== 'string' || !(FACT_OPERATORS as readonly string[]).includes(operator)) {
      throw new ProtocolError(
        `${what}: fact filter operator ${JSON.stringify(operator ?? null)} is not one of ${FACT_OPERATORS.join(' ')}`,
      );
    }
    return { fact, operator: operator as FactOperator, value: v };
  });
  const compound = (value['compound'] as unknown[]).map((inner): CompoundFilter[] => {
    if (!Array.isArray(inner)) throw new ProtocolError(`${what}: compound filters must be arrays`);
    return inner.map((c): CompoundFilter => {
      if (!isJsonObject(c) || typeof c['expr'] !== 'string')
        throw new ProtocolError(`${what}: compound filter items need an "expr" string`);
      return { expr: c['expr'] };
    });
  });
  return {
    fact: facts,
    cf_class: stringArray(value['cf_class'], 'cf_class', what),
    agent: stringArray(value['agent'], 'agent', what),
    identity: stringArray(value['identity'], 'identity', what),
    compound,
  };
}

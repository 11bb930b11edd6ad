// Server-side filter matching. Identity and agent filters are exact, including
// `/regex/` entries evaluated with RE2 semantics (re2js) like Go's regexp package. Fact filters are a
// reasonable approximation on top-level/dotted facts; cf_class never matches (simulated nodes have
// no classes) and compound filters never match (no expr-lang evaluator): a provisioner never uses them.
import { RE2JS } from 're2js';
import type { FactFilter, RequestFilter } from './types.js';

export interface FilterSubject {
  identity: string;
  agents: readonly string[];
  facts: Readonly<Record<string, unknown>>;
}

function regexBody(entry: string): string | undefined {
  return entry.length >= 2 && entry.startsWith('/') && entry.endsWith('/') ? entry.slice(1, -1) : undefined;
}

/** Compiles and caches RE2 expressions; one instance per fleet (broadcasts reuse the same patterns). */
export class FilterMatcher {
  private readonly cache = new Map<string, RE2JS | null>();

  private regex(pattern: string, caseInsensitive: boolean): RE2JS | null {
    const key = `${caseInsensitive ? 'i' : 's'}:${pattern}`;
    let re = this.cache.get(key);
    if (re === undefined) {
      try {
        re = RE2JS.compile(pattern, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0);
      } catch {
        re = null; // Go's filter treats an uncompilable expression as "no match"
      }
      if (this.cache.size > 10_000) this.cache.clear();
      this.cache.set(key, re);
    }
    return re;
  }

  private entryMatches(entry: string, value: string): boolean {
    const body = regexBody(entry);
    if (body === undefined) return entry === value;
    return this.regex(body, false)?.test(value) ?? false;
  }

  /** each identity list split once into exact names and regexes: a broadcast's filter is shared by every node */
  private readonly identityLists = new WeakMap<readonly string[], { exact: Set<string>; patterns: string[] }>();

  matchIdentity(entries: readonly string[], identity: string): boolean {
    let list = this.identityLists.get(entries);
    if (list === undefined) {
      list = { exact: new Set(entries.filter((e) => regexBody(e) === undefined)), patterns: [] };
      list.patterns = entries.filter((e) => regexBody(e) !== undefined);
      this.identityLists.set(entries, list);
    }
    return list.exact.has(identity) || list.patterns.some((e) => this.entryMatches(e, identity));
  }

  matchAgents(entries: readonly string[], agents: readonly string[]): boolean {
    return entries.every((e) => agents.some((a) => this.entryMatches(e, a)));
  }

  private factMatches(f: FactFilter, facts: Readonly<Record<string, unknown>>): boolean {
    let v: unknown = facts;
    for (const part of f.fact.split('.')) {
      if (typeof v !== 'object' || v === null || !Object.hasOwn(v, part)) return false;
      v = (v as Record<string, unknown>)[part];
    }
    if (v === undefined || v === null || typeof v === 'object') return false;
    const actual = String(v);
    const an = Number(actual);
    const wn = Number(f.value);
    const numeric = actual.trim() !== '' && f.value.trim() !== '' && !Number.isNaN(an) && !Number.isNaN(wn);
    switch (f.operator) {
      case '==':
        return numeric ? an === wn : actual.toLowerCase() === f.value.toLowerCase();
      case '!=':
        return numeric ? an !== wn : actual.toLowerCase() !== f.value.toLowerCase();
      case '<':
        return numeric ? an < wn : actual < f.value;
      case '>':
        return numeric ? an > wn : actual > f.value;
      case '<=':
        return numeric ? an <= wn : actual <= f.value;
      case '>=':
        return numeric ? an >= wn : actual >= f.value;
      case '=~':
        return this.regex(regexBody(f.value) ?? f.value, true)?.test(actual) ?? false;
      default:
        return false;
    }
  }

  /** A filter with all categories empty (or absent) matches every node. */
  matches(filter: RequestFilter | undefined, subject: FilterSubject): boolean {
    if (filter === undefined) return true;
    if (filter.identity.length > 0 && !this.matchIdentity(filter.identity, subject.identity)) return false;
    if (filter.agent.length > 0 && !this.matchAgents(filter.agent, subject.agents)) return false;
    if (filter.cf_class.length > 0) return false;
    if (filter.compound.length > 0) return false;
    return filter.fact.every((f) => this.factMatches(f, subject.facts));
  }
}

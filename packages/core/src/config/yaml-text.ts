import { LineCounter, parseDocument, type Tags } from 'yaml';
import type { ProblemCollector } from './errors.js';

const TIMESTAMP_TAG = 'tag:yaml.org,2002:timestamp';

/**
 * Upstream decodes with go-yaml v2, i.e. YAML 1.1: `yes`/`no`/`on`/`off` are booleans, and users
 * rely on that (`choria_insecure: yes`). go-yaml v2 does not turn `12:30` (sexagesimal) or dates
 * into numbers or timestamps for these string fields, so those tags are left out and such values
 * stay strings.
 */
function goYamlCompatibleTags(tags: Tags): Tags {
  return tags.filter((tag) => {
    if (typeof tag !== 'object' || tag === null) return true;
    if ('tag' in tag && tag.tag === TIMESTAMP_TAG) return false;
    return !('format' in tag && tag.format === 'TIME');
  });
}

/**
 * Parses YAML (JSON is valid YAML) into a plain object. Syntax errors are reported with line and
 * column; an empty document is an empty mapping. Returns undefined when nothing usable was read.
 */
export function readYamlMapping(text: string, problems: ProblemCollector): Record<string, unknown> | undefined {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, {
    version: '1.1',
    prettyErrors: false,
    lineCounter,
    customTags: goYamlCompatibleTags,
  });

  if (doc.errors.length > 0) {
    for (const err of doc.errors) {
      const { line, col } = lineCounter.linePos(err.pos[0]);
      problems.add(`YAML syntax error at line ${line}, column ${col}: ${err.message}`);
    }
    return undefined;
  }

  const value: unknown = doc.toJS({ maxAliasCount: 100 });
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    problems.add(
      `the file must be a mapping of keys to values (like "workers: 4"), ` +
        `not ${Array.isArray(value) ? 'a list' : `a single ${typeof value}`}`,
    );
    return undefined;
  }
  return value as Record<string, unknown>;
}

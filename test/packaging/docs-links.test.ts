// Every relative link in the README, docs/ and the examples' READMEs points at a file that exists,
// and every #anchor at a heading of that file (GitHub's heading ids), so the Documentation
// section and the cross-references between documents cannot rot silently.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

function markdownFiles(): string[] {
  const docs = readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(root, 'docs', f));
  const examples = readdirSync(join(root, 'examples'))
    .map((d) => join(root, 'examples', d, 'README.md'))
    .filter((f) => existsSync(f));
  return [join(root, 'README.md'), ...docs, ...examples];
}

/** GitHub's heading ids: lower case, punctuation other than - and _ dropped, spaces to -. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1] as string)));
}

function linksOf(file: string): string[] {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((l) => !/^[a-z]+:/i.test(l));
}

describe('documentation links', () => {
  const files = markdownFiles();

  it('finds the documents', () => {
    expect(files.map((f) => relative(root, f))).toEqual(
      expect.arrayContaining([
        'README.md',
        'docs/install.md',
        'docs/ha.md',
        'docs/metrics.md',
        'examples/systemd/README.md',
      ]),
    );
  });

  it.each(files.map((f) => [relative(root, f), f]))('%s links only to existing files and headings', (_name, file) => {
    const broken: string[] = [];
    for (const link of linksOf(file)) {
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? file : join(dirname(file), decodeURIComponent(path));
      if (!existsSync(target)) {
        broken.push(`${link}: no such file`);
        continue;
      }
      if (anchor !== undefined && anchor !== '' && statSync(target).isFile() && !anchorsOf(target).has(anchor)) {
        broken.push(`${link}: no heading #${anchor} in ${relative(root, target)}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('the README links every document in docs/', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const missing = readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .filter((f) => !readme.includes(`](docs/${f})`));
    expect(missing).toEqual([]);
  });
});

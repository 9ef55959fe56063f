// The documentation's own promises that need no cluster: the README stays a map, and every link
// between the pages (file and section) leads somewhere. The quickstart's commands are run by
// test/e2e/quickstart.test.ts.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { packageReadme, REPOSITORY_BLOB } from '../../scripts/pack-constructs.js';
import { REPO_ROOT } from '../support/run.js';

const read = (path: string): string => readFileSync(join(REPO_ROOT, path), 'utf8');

/** README.md and every page under docs/, by repository path. */
function pages(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
    );
  return ['README.md', ...walk('docs')];
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** The anchors of a Markdown page's headings (fenced code left out: a `# comment` there is no heading). */
function anchors(text: string): Set<string> {
  const outside = text.replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...outside.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1] ?? '')));
}

describe('the documentation', () => {
  it('keeps the README a map: at most ~200 lines', () => {
    const lines = read('README.md').split('\n').length;
    assert.ok(lines <= 200, `README.md has ${lines} lines: move the detail into docs/`);
  });

  it('has no link to a file or section that does not exist', () => {
    const broken: string[] = [];
    for (const page of pages()) {
      const text = read(page).replace(/^```[\s\S]*?^```/gm, '');
      for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target)) continue;
        const [file = '', section] = target.split('#');
        const path = file === '' ? page : relative(REPO_ROOT, join(REPO_ROOT, dirname(page), file));
        if (!existsSync(join(REPO_ROOT, path))) broken.push(`${page}: ${target} (no ${path})`);
        else if (section !== undefined && path.endsWith('.md') && !anchors(read(path)).has(section))
          broken.push(`${page}: ${target} (no heading with the anchor #${section} in ${path})`);
      }
    }
    assert.deepEqual(broken, []);
  });

  it("gives the constructs package a README whose links leave the package for the repository's pages", () => {
    assert.equal(
      packageReadme('[install](install.md), [the example](../apps/examples.ts#L1), [x](https://cdk8s.io), [s](#a)'),
      `[install](${REPOSITORY_BLOB}/docs/install.md), [the example](${REPOSITORY_BLOB}/apps/examples.ts#L1), [x](https://cdk8s.io), [s](#a)`,
    );
  });
});

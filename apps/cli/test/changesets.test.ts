import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// Every changeset is one `changeset version` can read: YAML frontmatter between two `---` lines
// naming workspace packages and a bump, then the summary. A markdown formatter once turned
// `"@rl2/algos": minor` + `---` into the heading `## "@rl2/algos": minor`, and `changeset
// status` / `changeset version` then failed on the whole folder.

const root = resolve(import.meta.dirname, '../../..');
const changesets = join(root, '.changeset');
const RELEASE = /^(["'])(@rl2\/[\w-]+)\1: (major|minor|patch|none)$/;

/** The names of the workspace's packages: each `DIR/*` glob of pnpm-workspace.yaml, one level deep. */
function workspaceNames(): Set<string> {
  const yaml = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8');
  const dirs = [...yaml.matchAll(/^\s+-\s+([\w/.-]+)\/\*\s*$/gm)].map((m) => m[1] as string);
  const names = new Set<string>();
  for (const dir of dirs) {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const file = join(root, dir, entry.name, 'package.json');
      if (entry.isDirectory() && existsSync(file))
        names.add(JSON.parse(readFileSync(file, 'utf8')).name);
    }
  }
  return names;
}

/** What is wrong with one changeset's text, or [] when `changeset version` reads it. */
function changesetProblems(text: string, packages: Set<string>): string[] {
  const lines = text.split('\n');
  if (lines[0] !== '---') return ['the first line is not `---`'];
  const end = lines.indexOf('---', 1);
  if (end < 0) return ['no closing `---` after the frontmatter'];
  const front = lines.slice(1, end);
  if (front.length === 0) return ['no package in the frontmatter'];
  const problems: string[] = [];
  for (const line of front) {
    const m = RELEASE.exec(line);
    if (!m) problems.push(`frontmatter line ${JSON.stringify(line)} is not "@rl2/name": bump`);
    else if (!packages.has(m[2] as string)) problems.push(`${m[2]} is no workspace package`);
  }
  const summary = lines.slice(end + 1).join('\n');
  if (summary.trim() === '') problems.push('no summary');
  return problems;
}

describe('.changeset/*.md', () => {
  const packages = workspaceNames();
  const files = readdirSync(changesets).filter((f) => f.endsWith('.md') && f !== 'README.md');

  it('finds the workspace packages and the changesets', () => {
    expect(packages.has('@rl2/algos')).toBe(true);
    expect(packages.has('@rl2/engine-linux-x64-gnu')).toBe(true);
    expect(files.length).toBeGreaterThan(0);
  });

  it('each has frontmatter that changeset version reads, naming workspace packages', () => {
    const bad = files.flatMap((f) =>
      changesetProblems(readFileSync(join(changesets, f), 'utf8'), packages).map(
        (p) => `${f}: ${p}`,
      ),
    );
    expect(bad).toEqual([]);
  });

  it('rejects the shapes a markdown formatter makes of it', () => {
    const names = new Set(['@rl2/algos']);
    expect(changesetProblems('---\n"@rl2/algos": minor\n---\n\nText.\n', names)).toEqual([]);
    expect(changesetProblems('---\n\n## "@rl2/algos": minor\n\nText.\n', names)).toEqual([
      'no closing `---` after the frontmatter',
    ]);
    expect(changesetProblems('---\n\n"@rl2/algos": minor\n---\n\nText.\n', names)).toEqual([
      'frontmatter line "" is not "@rl2/name": bump',
    ]);
    expect(changesetProblems('---\n"@rl2/nope": patch\n---\nText.\n', names)).toEqual([
      '@rl2/nope is no workspace package',
    ]);
  });
});

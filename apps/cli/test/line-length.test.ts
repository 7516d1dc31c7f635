import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// No source line over 140 characters (the formatter wraps code at 100 but leaves long string
// literals alone; split a long message into pieces joined with +). Checked: the TypeScript,
// JavaScript and C/C++ files git tracks under packages/, apps/ and tooling/, except fixtures
// and generated declaration files.

const root = resolve(import.meta.dirname, '../../..');
const LIMIT = 140;

/** A test's title: splitting it would re-indent the whole test body, so it stays on one line. */
const TEST_TITLE = /^\s*(it|test|describe)(\.\w+)?\(['"`]/;

function checkedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', 'packages', 'apps', 'tooling'], {
    cwd: root,
    encoding: 'utf8',
  });
  return out
    .split('\n')
    .filter((f) => /\.(ts|mts|mjs|js|c|h|cc)$/.test(f))
    .filter((f) => !/\/(fixtures|dist)\//.test(f) && !f.endsWith('.d.ts'));
}

function longLines(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(join(root, file), 'utf8');
  } catch {
    return []; // tracked but deleted in the working tree
  }
  return text
    .split('\n')
    .map((line, i) => ({ line, n: i + 1 }))
    .filter(({ line }) => line.length > LIMIT && !TEST_TITLE.test(line))
    .map(({ line, n }) => `${file}:${n} (${line.length} characters)`);
}

describe('source line length', () => {
  it(`no line over ${LIMIT} characters`, () => {
    const found = checkedFiles().flatMap(longLines);
    expect(found, 'split these lines (a message into + joined pieces)').toEqual([]);
  });
});

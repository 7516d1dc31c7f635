import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import {
  configLeaves,
  dpoConfigSchema,
  ppoConfigSchema,
  rmConfigSchema,
  sftConfigSchema,
} from '@rl2/trainers';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { createCli } from '../src/program.js';

const root = resolve(import.meta.dirname, '../../..');

/** Every non-test TypeScript source of the packages and the CLI. */
function sources(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'node_modules' && name !== 'dist' && name !== 'testing') walk(path);
      } else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts'))
        out.push(path);
    }
  };
  for (const pkg of readdirSync(join(root, 'packages'))) walk(join(root, 'packages', pkg, 'src'));
  walk(join(root, 'apps', 'cli', 'src'));
  return out;
}

/** The text of every string and template literal in `file` (template parts split at `${...}`), with where it is. */
function literals(file: string): { text: string; at: string }[] {
  const source = ts.createSourceFile(
    file,
    readFileSync(file, 'utf8'),
    ts.ScriptTarget.Latest,
    true,
  );
  const out: { text: string; at: string }[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      out.push({
        text: node.text,
        at: `${relative(root, file)}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`,
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return out;
}

const schemas = [sftConfigSchema, rmConfigSchema, dpoConfigSchema, ppoConfigSchema];
const leaves = [...new Set(schemas.flatMap((s) => configLeaves(s).map((l) => l.key)))];
const sections = [...new Set(leaves.map((k) => k.split('.')[0] as string))];
/** `section.a.b` in text (not inside a longer word, path or property access); `*` stands for any part of a segment. */
const dottedKey = new RegExp(
  `(?<![\\w.$/-])(?:${sections.join('|')})(?:\\.[A-Za-z_*][A-Za-z0-9_*]*)+`,
  'g',
);
/** A key mention is real when it names a leaf or a section of one (`data.train`), `*` matching within a segment. */
function exists(mention: string): boolean {
  const parts = mention.split('.');
  const pattern = (p: string) => new RegExp(`^${p.replace(/\*/g, '[a-z0-9_]*')}$`);
  return leaves.some((leaf) => {
    const segs = leaf.split('.');
    return parts.length <= segs.length && parts.every((p, i) => pattern(p).test(segs[i] as string));
  });
}

/** Flags of other tools that messages may name (`pnpm --filter ...`). */
const OTHER_TOOLS = new Set(['--filter', '--omit', '--expose-gc']); // pnpm's --filter, npm's --omit=optional, node's --expose-gc

describe('every config key and CLI flag that a message names exists', () => {
  const all = sources().flatMap(literals);

  it('finds the messages (the scan covers errors.ts files and thrown messages of every package)', () => {
    expect(all.length).toBeGreaterThan(500);
    expect(all.some((l) => l.text.includes('rollout.server_urls'))).toBe(true);
    // the check itself can fail: these names were in messages before issue 14
    for (const wrong of [
      'rollout.env_timeout_ms',
      'rollout.engine.urls',
      'rollout.train.responses_per_prompt',
      'rollout.maxGroupsPerStep',
    ])
      expect(exists(wrong), wrong).toBe(false);
  });

  it('dotted keys in string literals are keys of a trainer config schema (sft, rm, dpo, ppo)', () => {
    const unknown = all.flatMap(({ text, at }) =>
      [...text.matchAll(dottedKey)]
        .map((m) => m[0])
        .filter((k) => !exists(k))
        .map((k) => `${at}: ${k}`),
    );
    expect(unknown).toEqual([]);
  });

  it('--flags in string literals are options of an rl2 command', () => {
    const cli = createCli();
    const flags = new Set(
      [...cli.commands, cli.globalCommand].flatMap((c) =>
        c.options.flatMap((o) => o.rawName.split(/[ ,]+/).filter((w) => w.startsWith('--'))),
      ),
    );
    expect(flags.has('--nproc-per-node')).toBe(true);
    const unknown = all.flatMap(({ text, at }) =>
      [...text.matchAll(/(?<![\w-])--[a-z][a-z0-9-]*/g)]
        .map((m) => m[0])
        .filter((f) => !flags.has(f) && !OTHER_TOOLS.has(f))
        .map((f) => `${at}: ${f}`),
    );
    expect(unknown).toEqual([]);
  });
});

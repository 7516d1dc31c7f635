import { readFileSync, readdirSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Each published package's manifest matches what its source imports: every package a src file
// imports (statically, dynamically, or resolves by name at run time) is declared, and every
// entry of `dependencies` is used. Tests, benches and scripts may use devDependencies.

const root = resolve(import.meta.dirname, '../../..');
const packageDirs = [
  ...readdirSync(join(root, 'packages')).map((name) => join('packages', name)),
  join('apps', 'cli'),
];

/** Packages resolved by name only when running from TypeScript source (tests, tsx): devDependencies suffice. */
const DEV_ONLY: Record<string, Record<string, string>> = {
  '@rl2/parallel': {
    tsx: 'src/comm/init-process-group.ts starts its worker through tsx only when running from .ts source',
  },
};

interface Manifest {
  name: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** Non-test TypeScript/JavaScript files under `dir`. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (
      /\.(ts|mts|js|mjs)$/.test(name) &&
      !/\.test\.ts$/.test(name) &&
      !name.endsWith('.d.ts')
    )
      out.push(path);
  }
  return out;
}

/** `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');
const isBuiltin = (specifier: string) =>
  specifier.startsWith('node:') || builtinModules.includes(packageOf(specifier));
const isBare = (specifier: string) =>
  !specifier.startsWith('.') && !specifier.startsWith('/') && !/^[a-z]+:/.test(specifier);

/** What the package's src uses: `imports` (import/export/import()/resolve by name, with a file each) and every string literal. */
function usage(dir: string): { imports: Map<string, string>; strings: Set<string> } {
  const imports = new Map<string, string>();
  const strings = new Set<string>();
  for (const file of sourceFiles(join(root, dir, 'src'))) {
    const text = readFileSync(file, 'utf8');
    const specifiers = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
    for (const m of text.matchAll(/(?:import\.meta|require)\.resolve\(\s*['"]([^'"]+)['"]/g))
      specifiers.push(m[1]!);
    for (const s of specifiers) {
      if (isBare(s) && !isBuiltin(s) && !imports.has(packageOf(s)))
        imports.set(packageOf(s), relative(root, file));
    }
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false);
    const visit = (node: ts.Node) => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))
        strings.add(node.text);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { imports, strings };
}

describe('package manifests match the imports of their src', () => {
  for (const dir of packageDirs) {
    const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as Manifest;
    it(manifest.name, () => {
      const { imports, strings } = usage(dir);
      const runtime = new Set(
        Object.keys({
          ...manifest.dependencies,
          ...manifest.peerDependencies,
          ...manifest.optionalDependencies,
        }),
      );
      const devOnly = DEV_ONLY[manifest.name] ?? {};
      const undeclared = [...imports]
        .filter(
          ([name]) =>
            name !== manifest.name &&
            !runtime.has(name) &&
            !(name in devOnly && manifest.devDependencies?.[name]),
        )
        .map(([name, file]) => `${name} (imported by ${file})`);
      // a dependency is used when imported, or named in a string its code resolves (e.g. `pkg/file.json`)
      const used = (name: string) =>
        imports.has(name) || [...strings].some((s) => s === name || s.startsWith(`${name}/`));
      const unused = Object.keys(manifest.dependencies ?? {}).filter((name) => !used(name));
      expect(
        { undeclared, unused },
        `${dir}/package.json: declare what src imports in "dependencies"; move what only tests, ` +
          `benches or scripts use to "devDependencies"`,
      ).toEqual({ undeclared: [], unused: [] });
    });
  }
});

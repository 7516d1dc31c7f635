import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import type { z } from 'zod';
import { TrainersError } from '../errors.js';
import { closestKey } from './closest-key.js';
import { type ConfigLeaf, configLeaves } from './config-leaves.js';
import { interpolate } from './interpolate.js';
import { coerceOverride, splitOverride } from './parse-override.js';

/** Where a config comes from: optional YAML files (merged in order, a later one wins), then `key=value` overrides. */
export interface LoadConfigOptions {
  readonly configFile?: string | readonly string[];
  readonly overrides?: readonly string[];
}

type Tree = Record<string, unknown>;

function setPath(tree: Tree, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = tree;
  for (const part of parts.slice(0, -1)) {
    if (node[part] === null || typeof node[part] !== 'object') node[part] = {};
    node = node[part] as Tree;
  }
  node[parts[parts.length - 1]] = value;
}

function unknownKey(key: string, where: string, leaves: readonly ConfigLeaf[]): TrainersError {
  const hint = closestKey(
    key,
    leaves.map((l) => l.key),
  );
  return new TrainersError(
    'CONFIG_UNKNOWN_KEY',
    `unknown config key "${key}" in ${where}${hint ? `; did you mean "${hint}"?` : ''} (rl2 <trainer> --help lists every key)`,
  );
}

/** The mapping a YAML config file holds (empty for an empty file); errors name the file. */
function readConfigFile(file: string): Tree {
  let parsed: unknown;
  try {
    parsed = parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new TrainersError(
      'CONFIG_FILE',
      `cannot read config file ${file}: ${(err as Error).message}`,
    );
  }
  if (
    parsed !== null &&
    parsed !== undefined &&
    (typeof parsed !== 'object' || Array.isArray(parsed))
  ) {
    throw new TrainersError(
      'CONFIG_FILE',
      `config file ${file} must hold a YAML mapping such as "actor:\\n  lr: 1e-6"`,
    );
  }
  return (parsed ?? {}) as Tree;
}

/** Builds the raw (uninterpolated) tree of defaults from the schema's option metadata. */
export function configDefaults(schema: z.ZodType): Tree {
  const tree: Tree = {};
  for (const leaf of configLeaves(schema)) setPath(tree, leaf.key, structuredClone(leaf.default));
  return tree;
}

/**
 * Loads a trainer config: defaults owned by each component, then the YAML files in order, then
 * dotted `key=value` overrides (coerced by the leaf's type), then `${...}` interpolation,
 * then validation by the trainer's zod schema. Unknown keys fail with the closest valid key.
 */
export function loadConfig<S extends z.ZodType>(
  schema: S,
  options: LoadConfigOptions = {},
): z.infer<S> {
  const leaves = configLeaves(schema);
  const byKey = new Map(leaves.map((l) => [l.key, l]));
  const sections = new Set(
    leaves.flatMap((l) =>
      l.key
        .split('.')
        .slice(0, -1)
        .map((_, i, a) => a.slice(0, i + 1).join('.')),
    ),
  );
  const tree = configDefaults(schema);
  const source = new Map<string, string>();

  for (const file of [options.configFile ?? []].flat().filter(Boolean)) {
    const visit = (node: Tree, prefix: string) => {
      for (const [k, v] of Object.entries(node)) {
        const key = prefix ? `${prefix}.${k}` : k;
        if (byKey.has(key)) {
          setPath(tree, key, v);
          source.set(key, file);
        } else if (sections.has(key) && v !== null && typeof v === 'object' && !Array.isArray(v)) {
          visit(v as Tree, key);
        } else {
          throw unknownKey(key, file, leaves);
        }
      }
    };
    visit(readConfigFile(file), '');
  }

  for (const arg of options.overrides ?? []) {
    const { key, raw } = splitOverride(arg);
    const leaf = byKey.get(key);
    if (!leaf) throw unknownKey(key, `command-line argument "${arg}"`, leaves);
    setPath(tree, key, coerceOverride(raw, leaf.type));
    source.set(key, 'the command line');
  }

  const resolved = interpolate(tree, [...byKey.keys()], {
    coerce: (text, key) => {
      const leaf = byKey.get(key);
      return leaf ? coerceOverride(text, leaf.type) : text;
    },
  });
  const result = schema.safeParse(resolved);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const key = issue.path.join('.');
      const leafKey = [...byKey.keys()].find((k) => key === k || key.startsWith(`${k}.`)) ?? key;
      const value = leafKey
        .split('.')
        .reduce<unknown>((n, p) => (n as Tree | undefined)?.[p], resolved);
      const from = source.get(leafKey) ?? 'the defaults';
      return `  ${key}: ${issue.message}, got ${JSON.stringify(value)} (from ${from}; set ${leafKey}=... to fix)`;
    });
    throw new TrainersError('CONFIG_INVALID_VALUE', `invalid config:\n${lines.join('\n')}`);
  }
  return result.data as z.infer<S>;
}

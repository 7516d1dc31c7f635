import { TrainersError } from '../errors.js';
import { closestKey } from './closest-key.js';

const REF = /\$\{([^}]*)\}/g;
const WHOLE = /^\$\{([^}]*)\}$/;

type Tree = Record<string, unknown>;

function lookup(tree: Tree, key: string): { found: boolean; value: unknown } {
  let node: unknown = tree;
  for (const part of key.split('.')) {
    if (node === null || typeof node !== 'object' || !(part in (node as Tree)))
      return { found: false, value: undefined };
    node = (node as Tree)[part];
  }
  return { found: true, value: node };
}

/**
 * Resolves OmegaConf-style `${a.b.c}` references against the whole tree. A value that is
 * exactly one reference takes the referenced value with its type (`${data.train.max_length}`
 * stays a number or null); references inside longer strings are spliced in as text.
 * References may chain; a cycle or a missing key is an error naming both keys.
 * @param validKeys dotted leaf keys, used to suggest a fix for a misspelt reference
 */
export function interpolate(tree: Tree, validKeys: readonly string[]): Tree {
  const resolving = new Set<string>();
  const resolved = new Map<string, unknown>();

  const resolveKey = (key: string, from: string): unknown => {
    if (resolved.has(key)) return resolved.get(key);
    const { found, value } = lookup(tree, key);
    if (!found) {
      const hint = closestKey(key, validKeys);
      throw new TrainersError(
        'CONFIG_INTERPOLATION',
        `${from}: \${${key}} refers to a key that does not exist${hint ? ` (did you mean \${${hint}}?)` : ''}`,
      );
    }
    if (resolving.has(key)) {
      throw new TrainersError(
        'CONFIG_INTERPOLATION',
        `${from}: \${${key}} is circular (${[...resolving, key].join(' -> ')})`,
      );
    }
    resolving.add(key);
    const out = resolveValue(value, key);
    resolving.delete(key);
    resolved.set(key, out);
    return out;
  };

  const resolveValue = (value: unknown, at: string): unknown => {
    if (typeof value === 'string') {
      const whole = WHOLE.exec(value);
      if (whole) return resolveKey(whole[1].trim(), at);
      return value.replace(REF, (_, ref: string) => String(resolveKey(ref.trim(), at)));
    }
    if (Array.isArray(value)) return value.map((v, i) => resolveValue(v, `${at}[${i}]`));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(
        Object.keys(value as Tree).map((k) => [k, resolveKey(at ? `${at}.${k}` : k, at)]),
      );
    }
    return value;
  };

  return resolveValue(tree, '') as Tree;
}

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

/** What {@link interpolate} reads besides the tree. */
export interface InterpolateOptions {
  /** Where `${oc.env:NAME}` looks (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Reads an environment value that is a leaf's whole value as that leaf's type (`1e-6` a number). */
  readonly coerce?: (text: string, key: string) => unknown;
}

const ENV = 'oc.env:';

/**
 * OmegaConf's `${oc.env:NAME}` / `${oc.env:NAME,default}`: the environment variable's text, or
 * the default (`null` for null). Other resolvers (`${oc.decode:...}`, `${now:...}`) fail saying so.
 */
function resolveEnv(ref: string, from: string, env: InterpolateOptions['env']): string | null {
  if (!ref.startsWith(ENV)) {
    throw new TrainersError(
      'CONFIG_INTERPOLATION',
      `${from}: \${${ref}} uses the resolver "${ref.slice(0, ref.indexOf(':'))}", which rl2 does not support ` +
        '(it resolves ${a.b} references to other keys and ${oc.env:NAME} or ${oc.env:NAME,default})',
    );
  }
  const [name = '', ...rest] = ref.slice(ENV.length).split(',');
  const value = (env ?? process.env)[name.trim()];
  if (value !== undefined) return value;
  if (rest.length === 0) {
    throw new TrainersError(
      'CONFIG_INTERPOLATION',
      `${from}: \${${ref}}: the environment variable ${name.trim()} is not set; ` +
        `set it, or give a default as in \${oc.env:${name.trim()},default}`,
    );
  }
  const fallback = rest
    .join(',')
    .trim()
    .replace(/^(["'])(.*)\1$/, '$2');
  return fallback === 'null' ? null : fallback;
}

/**
 * Resolves OmegaConf-style `${a.b.c}` references against the whole tree. A value that is
 * exactly one reference takes the referenced value with its type (`${data.train.max_length}`
 * stays a number or null); references inside longer strings are spliced in as text.
 * References may chain; a cycle or a missing key is an error naming both keys.
 * `${oc.env:NAME}` and `${oc.env:NAME,default}` read the environment, as in OmegaConf.
 * @param validKeys dotted leaf keys, used to suggest a fix for a misspelt reference
 */
export function interpolate(
  tree: Tree,
  validKeys: readonly string[],
  options: InterpolateOptions = {},
): Tree {
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

  const resolveRef = (ref: string, at: string, whole: boolean): unknown => {
    if (!ref.includes(':')) return resolveKey(ref, at);
    const text = resolveEnv(ref, at, options.env);
    return whole && text !== null && options.coerce ? options.coerce(text, at) : text;
  };

  const resolveValue = (value: unknown, at: string): unknown => {
    if (typeof value === 'string') {
      const whole = WHOLE.exec(value);
      if (whole) return resolveRef(whole[1].trim(), at, true);
      return value.replace(REF, (_, ref: string) => String(resolveRef(ref.trim(), at, false)));
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

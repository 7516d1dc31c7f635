import type { z } from 'zod';
import { optionMeta } from './option.js';

/** One leaf of a config tree: dotted key, its schema, raw default and doc. */
export interface ConfigLeaf {
  readonly key: string;
  readonly schema: z.ZodType;
  readonly default: unknown;
  readonly description: string;
  /** Type shown by `--help` and used to coerce `key=value` strings. */
  readonly type: string;
}

type Def = {
  type: string;
  innerType?: z.ZodType;
  out?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  entries?: Record<string, string>;
};
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Human-readable type of a leaf schema, e.g. `number | null`, `token | sequence`. */
export function typeName(schema: z.ZodType): string {
  const def = defOf(schema);
  if (def.type === 'nullable' && def.innerType) return `${typeName(def.innerType)} | null`;
  if (def.type === 'enum' && def.entries) return Object.keys(def.entries).join(' | ');
  // z.preprocess (an alias spelling mapped onto the enum): show what it validates against
  if (def.type === 'pipe' && def.out) return typeName(def.out);
  if (def.type === 'tuple') return '[number, number]';
  return def.type;
}

/** Flattens an object schema built with `option` into its leaves, in declaration order. */
export function configLeaves(schema: z.ZodType, prefix = ''): ConfigLeaf[] {
  const def = defOf(schema);
  if (def.type === 'object' && def.shape) {
    return Object.entries(def.shape).flatMap(([k, child]) =>
      configLeaves(child, prefix ? `${prefix}.${k}` : k),
    );
  }
  const meta = optionMeta(schema);
  return [
    {
      key: prefix,
      schema,
      default: meta?.default ?? null,
      description: meta?.description ?? '',
      type: typeName(schema),
    },
  ];
}

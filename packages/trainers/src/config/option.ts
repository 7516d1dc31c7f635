import type { z } from 'zod';

/** What `rl2 <trainer> --help` and the loader need to know about one config leaf. */
export interface OptionMeta {
  /** Raw default, before `${...}` interpolation (so it may be a `${a.b}` string). */
  readonly default: unknown;
  /** One-line documentation shown by `--help`. */
  readonly description: string;
}

/**
 * Declares one config leaf: its validation schema, its default and a one-line doc.
 * The default is stored raw in zod's metadata so that defaults such as
 * `save_dir: ckpts/${trainer.experiment_name}` interpolate like user values do.
 */
export function option<S extends z.ZodType>(
  schema: S,
  defaultValue: unknown,
  description: string,
): S {
  return schema.meta({ default: defaultValue, description }) as S;
}

/** Reads the metadata `option` attached, or undefined for a section (object) schema. */
export function optionMeta(schema: z.ZodType): OptionMeta | undefined {
  const meta = schema.meta() as Partial<OptionMeta> | undefined;
  return meta && 'default' in meta
    ? { default: meta.default, description: meta.description ?? '' }
    : undefined;
}

/** A data path as written in a config: `path`, or `split@path` to pick a split (default train). */
export interface DataSpec {
  split: string;
  path: string;
}

/**
 * Parses `split@path` (RL2's syntax: `test@openai/gsm8k`, `validation@data/dev.parquet`).
 * Without `@` the split is `defaultSplit`.
 */
export function parseDataSpec(spec: string, defaultSplit = 'train'): DataSpec {
  const m = /^([A-Za-z0-9_.\-[\]:%]+)@(.+)$/.exec(spec);
  if (m && !m[1]?.includes('/')) return { split: m[1] as string, path: m[2] as string };
  return { split: defaultSplit, path: spec };
}

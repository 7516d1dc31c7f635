/** `{ k: v }` as `{ 'prefix/k': v }`: a metric group under its prefix (`train/`, `test/`, `actor/`). */
export function prefixed(prefix: string, metrics: object): Record<string, number> {
  return Object.fromEntries(
    Object.entries(metrics).map(([k, v]) => [`${prefix}/${k}`, v as number]),
  );
}

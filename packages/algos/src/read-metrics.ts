import { type Scalar, stack, tidy } from '@tensorflow/tfjs-core';

/**
 * Reads named scalar tensors (a loss's `metrics`) in one asynchronous transfer and disposes
 * them: `const m = await readMetrics(result.metrics)` gives plain numbers.
 */
export async function readMetrics<M extends string>(
  named: Readonly<Partial<Record<M, Scalar>>>,
): Promise<Partial<Record<M, number>>> {
  const keys = Object.keys(named) as M[];
  const out: Partial<Record<M, number>> = {};
  if (keys.length === 0) return out;
  const stacked = tidy(() => stack(keys.map((k) => named[k]!)));
  const values = await stacked.data();
  stacked.dispose();
  keys.forEach((k, i) => {
    out[k] = values[i]!;
    named[k]!.dispose();
  });
  return out;
}

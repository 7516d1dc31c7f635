import { type Scalar, stack, tidy } from '@tensorflow/tfjs-core';

/** Reads named scalar tensors in one transfer and disposes them. */
export function readMetrics<M extends string>(
  named: Partial<Record<M, Scalar>>,
): Partial<Record<M, number>> {
  const keys = Object.keys(named) as M[];
  const out: Partial<Record<M, number>> = {};
  if (keys.length === 0) return out;
  const values = tidy(() => stack(keys.map((k) => named[k]!)).dataSync());
  keys.forEach((k, i) => {
    out[k] = values[i]!;
    named[k]!.dispose();
  });
  return out;
}

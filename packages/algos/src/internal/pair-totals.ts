import type { Tensor } from '@tensorflow/tfjs-core';
import { AlgosError } from '../errors.js';
import { expectNumber } from './check.js';

/** Checks `[P]` pair tensors line up and returns the divisor max(totalPairs ?? P, 1). */
export function pairDivisor(
  tensors: Record<string, Tensor | undefined>,
  totalPairs: number | undefined,
  fn: string,
): number {
  let p: number | undefined;
  for (const [key, t] of Object.entries(tensors)) {
    if (t === undefined) continue;
    if (t.rank !== 1 || (p !== undefined && t.shape[0] !== p)) {
      throw new AlgosError(
        'SHAPE_MISMATCH',
        `${fn}: ${key} has shape [${t.shape.join(', ')}] but every pair input must be ` +
          `[P]${p === undefined ? '' : ` with P = ${p}`}; use sequenceSums + splitPairs to build them`,
      );
    }
    p = t.shape[0];
  }
  const total = totalPairs ?? p ?? 0;
  expectNumber(
    total,
    (v) => v >= 0,
    'totalPairs',
    fn,
    'the number of pairs in the whole update (all ranks), >= 0',
  );
  return Math.max(total, 1);
}

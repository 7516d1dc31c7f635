import type { Tensor } from '@tensorflow/tfjs-core';
import { AlgosError } from '../errors.js';
import { hostValues } from './host-values.js';

/**
 * Reads per-token integer ids as a flat Int32Array of length B*T (row-major).
 * `ids` may be `[B, T]` (per token), `[B]` (per row) or undefined (id = row index).
 */
export function tokenIds(
  ids: Tensor | undefined,
  b: number,
  t: number,
  what: string,
  fn: string,
  host?: ArrayLike<number>,
): Int32Array {
  const out = new Int32Array(b * t);
  if (ids === undefined) {
    for (let r = 0; r < b; r++) out.fill(r, r * t, (r + 1) * t);
    return out;
  }
  const data = hostValues(ids, host, what, fn);
  if (ids.rank === 1 && ids.shape[0] === b) {
    for (let r = 0; r < b; r++) out.fill(Math.round(data[r]!), r * t, (r + 1) * t);
    return out;
  }
  if (ids.rank === 2 && ids.shape[0] === b && ids.shape[1] === t) {
    for (let i = 0; i < b * t; i++) out[i] = Math.round(data[i]!);
    return out;
  }
  throw new AlgosError(
    'SHAPE_MISMATCH',
    `${fn}: ${what} has shape [${ids.shape.join(', ')}] but must be [${b}, ${t}] (per token) or [${b}] (per row)`,
  );
}

import type { Tensor } from '@tensorflow/tfjs-core';
import { AlgosError } from '../errors.js';

/** Throws SHAPE_MISMATCH unless `t` has exactly `shape`; `what` names the argument. */
export function expectShape(t: Tensor, shape: readonly number[], what: string, fn: string): void {
  if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
    throw new AlgosError(
      'SHAPE_MISMATCH',
      `${fn}: ${what} has shape [${t.shape.join(', ')}] but must be [${shape.join(', ')}] (the shape of actionMask / the first input)`,
    );
  }
}

/** Throws SHAPE_MISMATCH unless `t` is rank 2; returns [B, T]. */
export function expect2d(t: Tensor, what: string, fn: string): [number, number] {
  if (t.rank !== 2) {
    throw new AlgosError(
      'SHAPE_MISMATCH',
      `${fn}: ${what} must be a [B, T] tensor, got shape [${t.shape.join(', ')}]; reshape a single sequence to [1, T]`,
    );
  }
  return [t.shape[0]!, t.shape[1]!];
}

/** Throws INVALID_ARGUMENT unless `value` is a finite number satisfying `ok`. */
export function expectNumber(
  value: number,
  ok: (v: number) => boolean,
  what: string,
  fn: string,
  rule: string,
): void {
  if (!Number.isFinite(value) || !ok(value)) {
    throw new AlgosError(
      'INVALID_ARGUMENT',
      `${fn}: option ${what} = ${value} is invalid; it must be ${rule}`,
    );
  }
}

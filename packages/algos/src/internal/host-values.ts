import { type Tensor, getBackend } from '@tensorflow/tfjs-core';
import { AlgosError } from '../errors.js';

/** Backends whose tensors cannot be read back synchronously (a read waits on the GPU queue). */
const ASYNC_ONLY = new Set(['webgpu', 'webgl']);

/**
 * A structural tensor's values (a mask, ids): `host` when the caller passed them, else a
 * synchronous read, which only host-memory backends allow; elsewhere an error naming the field.
 */
export function hostValues(
  t: Tensor,
  host: ArrayLike<number> | undefined,
  what: string,
  fn: string,
): ArrayLike<number> {
  if (host !== undefined) {
    if (host.length !== t.size)
      throw new AlgosError(
        'SHAPE_MISMATCH',
        `${fn}: host.${what} has ${host.length} values but ${what} has ${t.size} ([${t.shape.join(', ')}])`,
      );
    return host;
  }
  if (ASYNC_ONLY.has(getBackend()))
    throw new AlgosError(
      'INVALID_ARGUMENT',
      `${fn}: on the ${getBackend()} backend pass the layout's host.${what} (the same values as a host array): ` +
        'a GPU tensor cannot be read back synchronously',
    );
  return t.dataSync();
}

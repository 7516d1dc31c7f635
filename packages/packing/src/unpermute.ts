import { PackingError } from './errors.js';

/**
 * Puts per-sequence results gathered in packed order back into the original order, dropping
 * the padding sequences: out[permutation[j]] = packed[j] for every permutation[j] < numSequences.
 *
 * @param packed [permutation.length] one value per packed sequence (the bins concatenated)
 * @param permutation [numSequences + numPadding] from {@link PackingPlan.permutation}
 * @param numSequences sequences before padding ({@link PackingPlan.numSequences})
 */
export function unpermute<T>(
  packed: ArrayLike<T>,
  permutation: ArrayLike<number>,
  numSequences: number,
): T[] {
  if (packed.length !== permutation.length) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `unpermute got ${packed.length} packed values for a permutation of ${permutation.length}; ` +
        'gather one value per packed sequence from every rank, padding included, in bin order.',
    );
  }
  const out = new Array<T>(numSequences);
  let placed = 0;
  for (let j = 0; j < permutation.length; j++) {
    const i = permutation[j];
    if (i < numSequences) {
      out[i] = packed[j];
      placed += 1;
    }
  }
  if (placed !== numSequences) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `permutation covers ${placed} of ${numSequences} sequences; pass the plan's own numSequences.`,
    );
  }
  return out;
}

/** inverse[permutation[j]] = j: where sequence i sits in packed order. */
export function invertPermutation(permutation: ArrayLike<number>): Int32Array {
  const inverse = new Int32Array(permutation.length);
  for (let j = 0; j < permutation.length; j++) inverse[permutation[j]] = j;
  return inverse;
}

import { PackingError } from './errors.js';

/** One bin laid out as a single packed row (varlen / flash-attention style). */
export interface MicroBatchLayout {
  /** [T] token ids of the bin's sequences concatenated, then any pad tokens (0). */
  inputIds: Int32Array;
  /** [T] position within its own sequence: restarts at 0 at every boundary. */
  positionIds: Int32Array;
  /** [T] original index of the sequence each token belongs to; -1 on pad tokens. */
  sequenceIds: Int32Array;
  /**
   * [segments + 1] cumulative boundaries: segment s is tokens cuSeqlens[s] .. cuSeqlens[s+1]-1.
   * One segment per bin entry, in bin order (padding sequences are empty segments), plus one
   * trailing pad segment when padToMultipleOf added tokens, as RL2's `slide_along_cp` does.
   */
  cuSeqlens: Int32Array;
  /** Pad tokens appended to reach padToMultipleOf (0 when none). */
  numPadTokens: number;
}

/** Options of {@link packMicroBatch}. */
export interface MicroBatchOptions {
  /** Round the row length up to a multiple of this (e.g. 2 * context-parallel size). */
  padToMultipleOf?: number;
}

/**
 * Concatenates the sequences of one bin into one row with its boundaries and positions.
 *
 * @param sequences [numSequences][len_i] token ids per sequence (original order)
 * @param bin sequence indices in this bin, e.g. `plan.bins[b]`; an index >= sequences.length is a
 *   padding sequence and contributes no tokens
 */
export function packMicroBatch(
  sequences: readonly ArrayLike<number>[],
  bin: readonly number[],
  options: MicroBatchOptions = {},
): MicroBatchLayout {
  const multiple = options.padToMultipleOf ?? 1;
  if (!Number.isInteger(multiple) || multiple < 1) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `padToMultipleOf must be an integer >= 1, got ${multiple}.`,
    );
  }
  let used = 0;
  for (const i of bin) {
    if (!Number.isInteger(i) || i < 0) {
      throw new PackingError(
        'INVALID_ARGUMENT',
        `bin entry ${i} is not a sequence index; pass plan.bins[b].`,
      );
    }
    used += i < sequences.length ? sequences[i].length : 0;
  }
  const numPadTokens = (multiple - (used % multiple)) % multiple;
  const total = used + numPadTokens;
  const inputIds = new Int32Array(total);
  const positionIds = new Int32Array(total);
  const sequenceIds = new Int32Array(total).fill(-1);
  const cuSeqlens = new Int32Array(bin.length + 1 + (numPadTokens > 0 ? 1 : 0));

  let offset = 0;
  bin.forEach((i, s) => {
    const tokens = i < sequences.length ? sequences[i] : [];
    for (let t = 0; t < tokens.length; t++) {
      inputIds[offset + t] = tokens[t];
      positionIds[offset + t] = t;
      sequenceIds[offset + t] = i;
    }
    offset += tokens.length;
    cuSeqlens[s + 1] = offset;
  });
  for (let t = 0; t < numPadTokens; t++) positionIds[offset + t] = t;
  if (numPadTokens > 0) cuSeqlens[bin.length + 1] = total;
  return { inputIds, positionIds, sequenceIds, cuSeqlens, numPadTokens };
}

import { PackingError } from './errors.js';

/** One bin laid out as a single packed row (varlen / flash-attention style). */
export interface MicroBatchLayout<F extends string = never> {
  /** [T] token ids of the bin's sequences concatenated, then any pad tokens (0). */
  inputIds: Int32Array;
  /** [T] position within its own sequence: restarts at 0 at every boundary. */
  positionIds: Int32Array;
  /** [T] original index of the sequence each token belongs to; -1 on pad tokens. */
  sequenceIds: Int32Array;
  /**
   * [T] segment of each token: s for the bin's s-th entry (0 .. bin.length - 1), bin.length on
   * pad tokens; what a packed forward pass masks attention by.
   */
  segmentIds: Int32Array;
  /**
   * [segments + 1] cumulative boundaries: segment s is tokens cuSeqlens[s] .. cuSeqlens[s+1]-1.
   * One segment per bin entry, in bin order (padding sequences are empty segments), plus one
   * trailing pad segment when padToMultipleOf added tokens, as RL2's `slide_along_cp` does.
   */
  cuSeqlens: Int32Array;
  /** Pad tokens appended to reach padToMultipleOf (0 when none). */
  numPadTokens: number;
  /** [T] each of `options.fields` laid out as the tokens are (0 on pad tokens). */
  fields: Record<F, Float64Array>;
}

/** Options of {@link packMicroBatch}. */
export interface MicroBatchOptions<F extends string = never> {
  /** Round the row length up to a multiple of this (e.g. 2 * context-parallel size). */
  padToMultipleOf?: number;
  /**
   * Per-token values packed alongside the ids, e.g. `{ targets, lossMask }`: `fields[name][i]`
   * holds one value per token of sequence i (RL2 packs its actions and masks the same way).
   */
  fields?: Readonly<Record<F, readonly ArrayLike<number>[]>>;
}

/**
 * Concatenates the sequences of one bin into one row with its boundaries and positions.
 *
 * @param sequences [numSequences][len_i] token ids per sequence (original order)
 * @param bin sequence indices in this bin, e.g. `plan.bins[b]`; an index >= sequences.length is a
 *   padding sequence and contributes no tokens
 */
export function packMicroBatch<F extends string = never>(
  sequences: readonly ArrayLike<number>[],
  bin: readonly number[],
  options: MicroBatchOptions<F> = {},
): MicroBatchLayout<F> {
  const multiple = options.padToMultipleOf ?? 1;
  if (!Number.isInteger(multiple) || multiple < 1) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `padToMultipleOf must be an integer >= 1, got ${multiple}.`,
    );
  }
  const named = Object.entries(options.fields ?? {}) as [F, readonly ArrayLike<number>[]][];
  let used = 0;
  for (const i of bin) {
    if (!Number.isInteger(i) || i < 0) {
      throw new PackingError(
        'INVALID_ARGUMENT',
        `bin entry ${i} is not a sequence index; pass plan.bins[b].`,
      );
    }
    if (i < sequences.length) {
      used += sequences[i].length;
      for (const [name, values] of named) checkField(name, values, i, sequences[i].length);
    }
  }
  const numPadTokens = (multiple - (used % multiple)) % multiple;
  const total = used + numPadTokens;
  const inputIds = new Int32Array(total);
  const positionIds = new Int32Array(total);
  const sequenceIds = new Int32Array(total).fill(-1);
  const segmentIds = new Int32Array(total).fill(bin.length);
  const cuSeqlens = new Int32Array(bin.length + 1 + (numPadTokens > 0 ? 1 : 0));
  const fields = Object.fromEntries(
    named.map(([name]) => [name, new Float64Array(total)]),
  ) as Record<F, Float64Array>;

  let offset = 0;
  bin.forEach((i, s) => {
    const tokens = i < sequences.length ? sequences[i] : [];
    for (let t = 0; t < tokens.length; t++) {
      inputIds[offset + t] = tokens[t];
      positionIds[offset + t] = t;
      sequenceIds[offset + t] = i;
      segmentIds[offset + t] = s;
    }
    for (const [name, values] of named) if (tokens.length > 0) fields[name].set(values[i], offset);
    offset += tokens.length;
    cuSeqlens[s + 1] = offset;
  });
  for (let t = 0; t < numPadTokens; t++) positionIds[offset + t] = t;
  if (numPadTokens > 0) cuSeqlens[bin.length + 1] = total;
  return { inputIds, positionIds, sequenceIds, segmentIds, cuSeqlens, numPadTokens, fields };
}

/** Throws INVALID_ARGUMENT unless field `name` has `length` values for sequence `i`. */
function checkField(name: string, values: readonly ArrayLike<number>[], i: number, length: number) {
  const got = values[i]?.length;
  if (got !== length) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `fields.${name}[${i}] has ${got ?? 'no'} values for the ${length} tokens of sequence ${i}; ` +
        'give one value per token.',
    );
  }
}

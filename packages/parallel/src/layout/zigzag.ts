import { ParallelError } from '../errors.js';

/**
 * How a packed row is split over cp ranks, zigzag: every sequence is cut into 2*cp equal
 * chunks and rank r keeps chunks r and 2cp-1-r, so each rank gets one early (cheap) and one
 * late (expensive) chunk of every causal sequence and the attention work is balanced
 * (the layout of zigzag ring attention, https://github.com/zhuzilin/ring-flash-attention).
 */
export interface ZigzagPlan {
  cp: number;
  /** Length of the packed row. */
  length: number;
  /** Row positions each rank keeps, in its local order: `indices[r][i]` = position of local token i. */
  indices: number[][];
  /** Sequence index of every row position. */
  segments: number[];
  /** Position within its sequence of every row position (for rotary embeddings). */
  positions: number[];
  /**
   * `inverse[p]` = index of row position p in the rank-major concatenation of the local rows
   * (rank 0's tokens, then rank 1's, ...), i.e. what undoes the split after an all-gather.
   */
  inverse: number[];
}

/**
 * Zigzag split of a packed row with boundaries `cuSeqlens` ([0, l0, l0+l1, ...]) over `cp`
 * ranks. Every sequence length must be a multiple of 2*cp (pad sequences when packing).
 */
export function planZigzag(cuSeqlens: readonly number[], cp: number): ZigzagPlan {
  if (!Number.isInteger(cp) || cp < 1)
    throw new ParallelError('INVALID_ARGUMENT', `cp=${cp} must be a positive integer.`);
  if (cuSeqlens.length < 1 || cuSeqlens[0] !== 0)
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `cuSeqlens must start at 0 (got [${cuSeqlens.slice(0, 4).join(', ')}...]).`,
    );
  const length = cuSeqlens[cuSeqlens.length - 1]!;
  const indices: number[][] = Array.from({ length: cp }, () => []);
  const segments = new Array<number>(length);
  const positions = new Array<number>(length);
  for (let s = 0; s + 1 < cuSeqlens.length; s++) {
    const a = cuSeqlens[s]!;
    const len = cuSeqlens[s + 1]! - a;
    if (len < 0)
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `cuSeqlens must not decrease (sequence ${s}: ${cuSeqlens[s]} -> ${cuSeqlens[s + 1]}).`,
      );
    if (len % (2 * cp) !== 0) {
      throw new ParallelError(
        'LAYOUT',
        `sequence ${s} has length ${len}, not a multiple of 2*cp = ${2 * cp}; pad every packed ` +
          `sequence to a multiple of 2*cp for context parallelism.`,
      );
    }
    const chunk = len / (2 * cp);
    for (let i = 0; i < len; i++) {
      segments[a + i] = s;
      positions[a + i] = i;
    }
    for (let r = 0; r < cp; r++) {
      for (const c of [r, 2 * cp - 1 - r])
        for (let i = 0; i < chunk; i++) indices[r]!.push(a + c * chunk + i);
    }
  }
  const inverse = new Array<number>(length);
  let k = 0;
  for (const idx of indices) for (const p of idx) inverse[p] = k++;
  return { cp, length, indices, segments, positions, inverse };
}

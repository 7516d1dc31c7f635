import {
  type Tensor,
  type Tensor1D,
  concat,
  gather,
  reshape,
  slice,
  tensor1d,
  tidy,
  unsortedSegmentSum,
  zeros,
} from '@tensorflow/tfjs-core';
import type { TokenLayout } from '../layout.js';
import { expect2d } from './check.js';
import { tokenIds } from './token-ids.js';

/** Sequence membership of every token of a `[B, T]` layout, ready for segment sums. */
export interface Segments {
  /** Number of sequences S (max id + 1). */
  readonly numSequences: number;
  /** Flat [B*T] int32 id per token; padding (-1) is mapped to the extra bucket S. */
  readonly flatIds: Int32Array;
  readonly rows: number;
  readonly cols: number;
}

/** Resolves `layout.sequenceIds` (or the row index) into segments. */
export function resolveSegments(layout: TokenLayout, fn: string): Segments {
  const [b, t] = expect2d(layout.actionMask, 'actionMask', fn);
  const ids = tokenIds(layout.sequenceIds, b, t, 'sequenceIds', fn, layout.host?.sequenceIds);
  let s = 0;
  for (const id of ids) if (id + 1 > s) s = id + 1;
  for (let i = 0; i < ids.length; i++) if (ids[i]! < 0) ids[i] = s;
  return { numSequences: s, flatIds: ids, rows: b, cols: t };
}

/** Per-sequence sums of a `[B, T]` tensor: returns `[S]` (differentiable). */
export function segmentSums(values: Tensor, seg: Segments): Tensor1D {
  return tidy(() => {
    const flat = reshape(values, [seg.rows * seg.cols]);
    const sums = unsortedSegmentSum(flat, tensor1d(seg.flatIds, 'int32'), seg.numSequences + 1);
    return slice(sums, [0], [seg.numSequences]) as Tensor1D;
  });
}

/** Broadcasts per-sequence values `[S]` back to tokens `[B, T]` (padding gets 0). Differentiable. */
export function broadcastToTokens(perSequence: Tensor, seg: Segments): Tensor {
  return tidy(() => {
    const withPad = concat([reshape(perSequence, [seg.numSequences]), zeros([1])]);
    return reshape(gather(withPad, tensor1d(seg.flatIds, 'int32')), [seg.rows, seg.cols]);
  });
}

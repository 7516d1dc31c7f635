import { flashAttention } from '@rl2/engine';
import type { RowSplitFn, TokenBatch } from '@rl2/models';
import {
  allGatherContext,
  contextParallelAttentionKernel,
  type ProcessGroup,
  planZigzag,
} from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import { TrainersError } from '../errors.js';

/**
 * Context parallelism for the decoder's `splitRow` hook: every sequence of the packed row is
 * padded at its end to a multiple of 2*cp tokens (padding after a sequence changes nothing
 * before it under causal attention), the row is split zigzag (@rl2/parallel `planZigzag`:
 * rank r keeps chunks r and 2cp-1-r of each sequence), attention all-gathers K/V (and runs in
 * tiles where the backend has `flashAttention`), and per-token outputs are all-gathered back
 * into row order with the padding dropped. Each rank then
 * computes the same loss over the whole row; the gradient of its own tokens stays on it, so
 * summing gradients over cp gives the one-process gradient.
 */
export function contextParallelSplit(cp: ProcessGroup): RowSplitFn {
  const unit = 2 * cp.size;
  return (batch: TokenBatch, targets?: ArrayLike<number>) => {
    if ((batch.rows ?? 1) !== 1)
      throw new TrainersError(
        'INVALID_ARGUMENT',
        `context parallelism takes one packed row per micro-batch, got ${batch.rows} rows`,
      );
    const n = batch.inputIds.length;
    const segments = batch.segmentIds ?? new Array<number>(n).fill(0);
    const ids: number[] = [];
    const positions: number[] = [];
    const padTargets: number[] = [];
    const rowIndex = new Int32Array(n); // padded-row position of every original token
    const cuSeqlens = [0];
    for (let start = 0; start < n; ) {
      let end = start;
      while (end < n && segments[end] === segments[start]) end++;
      for (let t = start; t < end; t++) {
        rowIndex[t] = ids.length;
        ids.push(batch.inputIds[t] as number);
        positions.push(batch.positionIds[t] as number);
        padTargets.push(targets ? (targets[t] as number) : 0);
      }
      const last = positions[positions.length - 1] as number;
      for (let p = 1; (end - start + p - 1) % unit !== 0; p++) {
        ids.push(0);
        positions.push(last + p);
        padTargets.push(0);
      }
      cuSeqlens.push(ids.length);
      start = end;
    }
    const plan = planZigzag(cuSeqlens, cp.size);
    const mine = plan.indices[cp.rank] as number[];
    return {
      batch: {
        inputIds: mine.map((p) => ids[p] as number),
        positionIds: mine.map((p) => positions[p] as number),
        segmentIds: mine.map((p) => plan.segments[p] as number),
        rows: 1,
      },
      ...(targets ? { targets: mine.map((p) => padTargets[p] as number) } : {}),
      // tiled on the native backend (no [local, row] score blocks), masked blocks elsewhere
      attention: contextParallelAttentionKernel(plan, cp, flashAttention),
      gather: (local: tf.Tensor1D) =>
        tf.tidy(() =>
          tf.gather(allGatherContext(local, plan, cp, 'own'), tf.tensor1d(rowIndex, 'int32')),
        ),
    };
  };
}

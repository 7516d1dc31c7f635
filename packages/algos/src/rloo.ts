import { type Tensor, tensor } from '@tensorflow/tfjs-core';
import {
  actionTimelines,
  broadcastTrajectories,
  groupCount,
  readTokens,
  trajectoryTotals,
} from './internal/trajectories.js';
import type { TrajectoryBatch } from './layout.js';

/** Options of `computeRlooAdvantages`. */
export interface RlooOptions {
  /** Responses per prompt G (default 1: the leave-one-out runs over the whole batch). */
  readonly responsesPerPrompt?: number;
}

/**
 * REINFORCE Leave-One-Out (Ahmadian et al. 2024, https://arxiv.org/abs/2402.14740;
 * Kool et al. 2019): per trajectory R = sum of its rewards on action tokens, and
 *   A_i = R_i - mean_{j != i, same prompt} R_j = G / (G - 1) * (R_i - mean_group R).
 * With one response per prompt the whole batch is the group; a group of size 1 has baseline
 * 0 (A = R). Broadcast to every action token.
 *
 * @returns advantages `[B, T]` float32, 0 off action tokens.
 */
export function computeRlooAdvantages(batch: TrajectoryBatch, options: RlooOptions = {}): Tensor {
  const fn = 'computeRlooAdvantages';
  const g0 = options.responsesPerPrompt ?? 1;
  const tl = actionTimelines(batch.actionMask, batch.trajectoryIds, fn);
  const r = readTokens(batch.rewards, [tl.rows, tl.cols], 'rewards', fn);
  const totals = trajectoryTotals(r, tl);
  groupCount(totals.length, g0, fn);
  const g = g0 === 1 ? totals.length : g0;
  const adv = new Float64Array(totals.length);
  for (let start = 0; start < totals.length; start += g) {
    const group = totals.subarray(start, start + g);
    let s = 0;
    for (const x of group) s += x;
    group.forEach((x, j) => {
      adv[start + j] = g > 1 ? x - (s - x) / (g - 1) : x;
    });
  }
  return tensor(Float32Array.from(broadcastTrajectories(adv, tl)), [tl.rows, tl.cols]);
}

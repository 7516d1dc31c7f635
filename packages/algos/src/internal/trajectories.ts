import type { Tensor } from '@tensorflow/tfjs-core';
import { AlgosError } from '../errors.js';
import { expect2d, expectShape } from './check.js';
import { hostValues } from './host-values.js';
import { tokenIds } from './token-ids.js';

/** float32 machine epsilon, the eps RL2 adds to standard deviations (torch.finfo(float32).eps). */
export const FLOAT32_EPS = 2 ** -23;

/** The action-only timelines of the trajectories of a `[B, T]` batch. */
export interface Timelines {
  readonly rows: number;
  readonly cols: number;
  /** Per trajectory id (0..N-1): flat indices (row-major) of its action tokens, in order. */
  readonly actions: number[][];
}

/**
 * Joins every trajectory's action tokens in row-major order, skipping observation, prompt and
 * padding tokens (actionMask 0). `trajectoryIds` is `[B, T]`, `[B]` or undefined (row index);
 * ids must be 0..N-1, negative ids mark padding.
 */
export function actionTimelines(
  actionMask: Tensor,
  trajectoryIds: Tensor | undefined,
  fn: string,
): Timelines {
  const [b, t] = expect2d(actionMask, 'actionMask', fn);
  const ids = tokenIds(trajectoryIds, b, t, 'trajectoryIds', fn);
  const mask = hostValues(actionMask, undefined, 'actionMask', fn);
  let n = 0;
  for (const id of ids) if (id + 1 > n) n = id + 1;
  const actions: number[][] = Array.from({ length: n }, () => []);
  for (let i = 0; i < b * t; i++) {
    const id = ids[i]!;
    if (mask[i]! > 0) {
      if (id < 0) {
        throw new AlgosError(
          'INVALID_ARGUMENT',
          `${fn}: token ${i} (row ${Math.floor(i / t)}, position ${i % t}) is an action but has ` +
            `trajectory id ${id}; give every action token an id 0..N-1`,
        );
      }
      actions[id]!.push(i);
    }
  }
  return { rows: b, cols: t, actions };
}

/** Reads a `[B, T]` tensor matching the mask as float64. */
export function readTokens(
  x: Tensor,
  shape: readonly number[],
  what: string,
  fn: string,
): Float64Array {
  expectShape(x, shape, what, fn);
  return Float64Array.from(hostValues(x, undefined, what, fn));
}

/** Sum over each trajectory's action tokens. */
export function trajectoryTotals(values: Float64Array, tl: Timelines): Float64Array {
  const out = new Float64Array(tl.actions.length);
  tl.actions.forEach((idx, k) => {
    let s = 0;
    for (const i of idx) s += values[i]!;
    out[k] = s;
  });
  return out;
}

/** Mean and unbiased std of `xs` (std 0 for fewer than two values, never NaN). */
export function meanStd(xs: ArrayLike<number>): { mean: number; std: number } {
  const n = xs.length;
  if (n === 0) return { mean: 0, std: 0 };
  let s = 0;
  for (let i = 0; i < n; i++) s += xs[i]!;
  const mean = s / n;
  if (n < 2) return { mean, std: 0 };
  let v = 0;
  for (let i = 0; i < n; i++) v += (xs[i]! - mean) ** 2;
  return { mean, std: Math.sqrt(v / (n - 1)) };
}

/** In place on a fresh array: (x - mean) / (std + eps) over all action tokens; others set to 0. */
export function whitenInPlace(values: Float64Array, tl: Timelines): void {
  const flat = tl.actions.flat();
  const picked = flat.map((i) => values[i]!);
  const { mean, std } = meanStd(picked);
  const out = new Float64Array(values.length);
  for (const i of flat) out[i] = (values[i]! - mean) / (std + FLOAT32_EPS);
  values.set(out);
}

/** Writes one scalar per trajectory onto all its action tokens (others 0). */
export function broadcastTrajectories(perTrajectory: Float64Array, tl: Timelines): Float64Array {
  const out = new Float64Array(tl.rows * tl.cols);
  tl.actions.forEach((idx, k) => {
    for (const i of idx) out[i] = perTrajectory[k]!;
  });
  return out;
}

/** Checks that N trajectories split into groups of `responsesPerPrompt`; returns the group count. */
export function groupCount(n: number, responsesPerPrompt: number, fn: string): number {
  if (!Number.isInteger(responsesPerPrompt) || responsesPerPrompt < 1) {
    throw new AlgosError(
      'INVALID_ARGUMENT',
      `${fn}: responsesPerPrompt = ${responsesPerPrompt} must be a positive integer (rollout.responses_per_prompt)`,
    );
  }
  if (n % responsesPerPrompt !== 0) {
    throw new AlgosError(
      'INVALID_ARGUMENT',
      `${fn}: ${n} trajectories do not split into groups of responsesPerPrompt ` +
        `= ${responsesPerPrompt}; number trajectories 0..N-1 with each prompt's responses ` +
        `contiguous and N a multiple of responsesPerPrompt`,
    );
  }
  return n / responsesPerPrompt;
}

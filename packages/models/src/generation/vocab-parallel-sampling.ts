import type { ProcessGroup } from '@rl2/parallel';
import type { SamplingRow } from './batch-stepper.js';
import { type SampledToken, sampleToken } from './sample-token.js';

/** What every rank of the tp group knows of a row it samples. */
export interface VocabParallelRow {
  /** <= 0: greedy. */
  readonly temperature: number;
  /** top-k, top-p or top logprobs: the row's logits are gathered and sampled whole. */
  readonly wholeRow: boolean;
}

/** The group-wide description of a sampling row (the lead derives it; the others receive it). */
export function vocabParallelRow(row: SamplingRow, vocabSize: number): VocabParallelRow {
  const temperature = row.params.temperature ?? 1;
  const topK = row.params.topK ?? 0;
  const cut = topK > 0 && topK < vocabSize;
  return {
    temperature,
    wholeRow: row.topLogprobs > 0 || (temperature > 0 && (cut || (row.params.topP ?? 1) < 1)),
  };
}

/** float64 -> two float32 (hi + lo) that sum back to ~48 bits: float32 buffers carry the partial sums. */
function split(x: number): [number, number] {
  const hi = Math.fround(x);
  return [hi, Math.fround(x - hi)];
}

/**
 * Samples the next token of each row from logits split over the vocabulary: `local` [B, V/tp]
 * holds this rank's contiguous columns [rank * V/tp, (rank + 1) * V/tp). Every rank of `tp`
 * calls it with the same `rows`; group rank 0 (the lead) passes its rows' parameters and
 * seeded streams in `lead` and gets the tokens, the others get undefined.
 *
 * Without gathering the logits (the case of RL rollouts: greedy, or temperature sampling over
 * the whole vocabulary): one max all-reduce gives each row's global max m; one sum all-reduce
 * gives every rank each shard's sum of w = exp((z - m) / T) and its argmax; the lead draws
 * u * sum from the row's stream (as `sampleToken` does), finds the shard where the running sum
 * passes it and broadcasts that; the owner scans its shard and one sum all-reduce returns the
 * token and its logit: logprob = log(w / sum), the full distribution's. Rows with top-k, top-p
 * or top logprobs gather their whole row into that last all-reduce and the lead runs
 * `sampleToken` on it. The tokens are `sampleToken`'s up to float rounding of the sums.
 */
export function sampleVocabParallel(
  local: Float32Array,
  rows: readonly VocabParallelRow[],
  tp: ProcessGroup,
  vocabSize: number,
  lead?: readonly SamplingRow[],
): SampledToken[] | undefined {
  const b = rows.length;
  const width = vocabSize / tp.size;
  const start = tp.rank * width;
  const weightT = (i: number) =>
    (rows[i] as VocabParallelRow).temperature > 0 ? (rows[i] as VocabParallelRow).temperature : 1;
  // 1. the global max of each row
  const max = new Float32Array(b).fill(Number.NEGATIVE_INFINITY);
  const arg = new Int32Array(b);
  for (let i = 0; i < b; i++) {
    for (let j = 0; j < width; j++) {
      const z = local[i * width + j] as number;
      if (z > (max[i] as number)) {
        max[i] = z;
        arg[i] = j;
      }
    }
  }
  const gmax = tp.allReduce(Float32Array.from(max), 'max');
  // 2. every shard's sum of weights and, where it holds the max, its first argmax
  const slots = new Float32Array(tp.size * b * 3);
  for (let i = 0; i < b; i++) {
    const m = gmax[i] as number;
    const t = weightT(i);
    let s = 0;
    for (let j = 0; j < width; j++) s += Math.exp(((local[i * width + j] as number) - m) / t);
    const at = (tp.rank * b + i) * 3;
    slots.set([...split(s), max[i] === m ? start + (arg[i] as number) : -1], at);
  }
  tp.allReduce(slots, 'sum');
  const shardSum = (r: number, i: number) =>
    (slots[(r * b + i) * 3] as number) + (slots[(r * b + i) * 3 + 1] as number);
  const total = (i: number) => {
    let s = 0;
    for (let r = 0; r < tp.size; r++) s += shardSum(r, i);
    return s;
  };
  const argmax = (i: number) => {
    for (let r = 0; r < tp.size; r++) {
      const id = slots[(r * b + i) * 3 + 2] as number;
      if (id >= 0) return id;
    }
    return 0;
  };
  const greedy = (i: number): SampledToken => ({
    token: argmax(i),
    logprob: Math.log(1 / total(i)),
  });
  if (rows.every((r) => r.temperature <= 0 && !r.wholeRow))
    return lead ? rows.map((_, i) => greedy(i)) : undefined;

  // 3. the lead's plan per row: [mode (0 argmax, 1 pick in a shard, 2 whole row), shard, u hi, u lo]
  const plan = new Float32Array(b * 4);
  if (lead) {
    for (let i = 0; i < b; i++) {
      const row = rows[i] as VocabParallelRow;
      if (row.wholeRow) plan[i * 4] = 2;
      else if (row.temperature > 0) {
        let u = (lead[i] as SamplingRow).rng.next() * total(i);
        for (let r = 0; r < tp.size; r++) {
          const s = shardSum(r, i);
          if (u < s) {
            plan.set([1, r, ...split(u)], i * 4);
            break;
          }
          u -= s;
        }
      }
    }
  }
  tp.broadcast(plan, 0);
  // 4. the owners' picks [id + 1, logit] and the whole rows, summed over the group
  const whole: number[] = [];
  for (let i = 0; i < b; i++) if (plan[i * 4] === 2) whole.push(i);
  const picks = new Float32Array(b * 2 + whole.length * vocabSize);
  for (let i = 0; i < b; i++) {
    if (plan[i * 4] !== 1 || plan[i * 4 + 1] !== tp.rank) continue;
    const m = gmax[i] as number;
    const t = weightT(i);
    let u = (plan[i * 4 + 2] as number) + (plan[i * 4 + 3] as number);
    let j = 0;
    for (; j < width - 1; j++) {
      u -= Math.exp(((local[i * width + j] as number) - m) / t);
      if (u < 0) break;
    }
    picks.set([start + j + 1, local[i * width + j] as number], i * 2);
  }
  whole.forEach((i, k) => {
    picks.set(local.subarray(i * width, (i + 1) * width), b * 2 + k * vocabSize + start);
  });
  tp.allReduce(picks, 'sum');
  if (!lead) return undefined;
  // 5. the lead's tokens
  return rows.map((_, i) => {
    const mode = plan[i * 4];
    if (mode === 2) {
      const k = whole.indexOf(i);
      const sr = lead[i] as SamplingRow;
      return sampleToken(
        picks.subarray(b * 2 + k * vocabSize, b * 2 + (k + 1) * vocabSize),
        sr.params,
        sr.rng,
        sr.topLogprobs,
      );
    }
    if (mode === 1) {
      const w = Math.exp(((picks[i * 2 + 1] as number) - (gmax[i] as number)) / weightT(i));
      return { token: (picks[i * 2] as number) - 1, logprob: Math.log(w / total(i)) };
    }
    return greedy(i); // greedy, or u past the last weight (float rounding): the argmax, as sampleToken
  });
}

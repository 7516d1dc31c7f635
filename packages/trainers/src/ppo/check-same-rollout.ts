import type { TrainingSequence } from '@rl2/rollout';
import { TrainersError } from '../errors.js';
import type { DataParallel } from '../parallel-model/data-parallel.js';

/** Three 20-bit FNV-1a digests of the batch (token ids, masks, engine log-probs, rewards, ids): exact in float32. */
function rolloutDigest(sequences: readonly TrainingSequence[]): [number, number, number] {
  const words = new Uint32Array(3).fill(2166136261);
  const f32 = new Float32Array(1);
  const u32 = new Uint32Array(f32.buffer);
  const mix = (x: number) => {
    for (let k = 0; k < 3; k++)
      words[k] = Math.imul((words[k] as number) ^ ((x + k * 0x9e3779b9) >>> 0), 16777619);
  };
  const floats = (xs: readonly number[]) => {
    for (const x of xs) {
      f32[0] = x;
      mix(u32[0] as number);
    }
  };
  mix(sequences.length);
  for (const s of sequences) {
    mix(s.states.length);
    floats(s.states);
    floats(s.actions);
    floats(s.actionMask);
    floats(s.llmLogps);
    floats(s.rewards);
    mix(s.trajectoryId);
    mix(s.promptId);
  }
  return [words[0] as number, words[1] as number, words[2] as number].map(
    (w) => (w >>> 12) & 0xfffff,
  ) as [number, number, number];
}

/**
 * Every rank rolls out the whole step with the same seeds (what one process would sample), so
 * the ranks must hold the same batch: their digests are all-gathered (each rank fills its slot
 * of a zero buffer) and compared with rank 0's. Throws, naming the ranks, when they differ.
 */
export function checkSameRollout(
  dp: DataParallel,
  sequences: readonly TrainingSequence[],
  step: number,
): void {
  if (dp.size === 1) return;
  const slots = new Float32Array(3 * dp.size);
  slots.set(rolloutDigest(sequences), 3 * dp.rank);
  const all = dp.allReduceSum(slots);
  const differ: number[] = [];
  for (let r = 1; r < dp.size; r++) {
    if ([0, 1, 2].some((k) => all[3 * r + k] !== all[k])) differ.push(r);
  }
  if (differ.length > 0) {
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `rollout of step ${step}: rank(s) ${differ.join(', ')} sampled a different batch than ` +
        `rank 0; data-parallel PPO needs seeded, deterministic sampling ` +
        `(rollout.engine=embedded, the same trainer.seed and trainer.threads on every rank)`,
    );
  }
}

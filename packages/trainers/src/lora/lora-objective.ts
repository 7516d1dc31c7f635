import type { LoraModel } from '@rl2/models';
import type { PackedBin } from '../bins/pack-bins.js';
import type { Objective } from '../step/objective.js';

/** 32-bit FNV-1a over the run's seed and a bin's tokens and positions. */
function binKey(seed: number, bin: PackedBin): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (const v of [...bin.inputIds, -1, ...bin.positionIds]) h = Math.imul(h ^ v, 0x01000193) >>> 0;
  return h;
}

/**
 * The dropout seed of optimizer step `update` of a run seeded `seed` (rl2 ppo's updates): a bin
 * with the same tokens in another step, or another PPO epoch, draws other masks; a resumed run
 * numbers its steps as an unbroken one does, so it draws the same.
 */
export function updateDropoutSeed(seed: number, update: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x01000193) ^ Math.imul(update + 1, 0x85ebca6b)) >>> 0;
}

/**
 * `objective` with LoRA dropout keyed per micro-batch (see @rl2/models `LoraDropout`): each
 * bin's masks follow from `seed` and its tokens alone, so a recomputed layer's backward sees
 * its forward's masks and a resumed run draws what an unbroken one does. (A bin packed again
 * with the same tokens, e.g. in another epoch, gets the same masks.) Unchanged without dropout.
 */
export function withLoraDropout<P>(
  objective: Objective<P>,
  lora: LoraModel | undefined,
  seed: number,
): Objective<P> {
  const dropout = lora?.dropout;
  if (!dropout) return objective;
  return {
    groupSize: objective.groupSize,
    ...(objective.headline ? { headline: objective.headline } : {}),
    ...(objective.prepare ? { prepare: (bin: PackedBin) => objective.prepare!(bin) } : {}),
    ...(objective.release ? { release: (p: P) => objective.release!(p) } : {}),
    loss: (bin, totals, prepared) => {
      dropout.key = binKey(seed, bin);
      return objective.loss(bin, totals, prepared);
    },
  };
}

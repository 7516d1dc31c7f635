import type * as tf from '@tensorflow/tfjs-core';
import type { ModelSection } from '../config/sections.js';
import { AdamW } from './adamw.js';
import { scheduledLr } from './cosine-schedule.js';

/** A model's optimizer and the learning rate of its i-th step. */
export interface SectionOptimizer {
  readonly optimizer: AdamW;
  lrAt(step: number): number;
}

/**
 * The optimizer a model section (`actor.*`, `critic.*`) asks for: AdamW with its betas, eps and
 * weight_decay over `params`, on its schedule (lr, min_lr, warmup_ratio, scheduler) spread over
 * `totalUpdates` optimizer steps. With `lora.rank` > 0 the adapters' B matrices (`*.lora_B.weight`)
 * step at `lora.lr_ratio` x that learning rate (LoRA+, PEFT's `loraplus_lr_ratio`), the A
 * matrices at the schedule's, and whatever else trains (the modules_to_save copies, a value
 * model's score head) at `lora.modules_lr_ratio` x the schedule's.
 */
export function sectionOptimizer(
  section: ModelSection,
  params: Readonly<Record<string, tf.Variable>>,
  totalUpdates: number,
): SectionOptimizer {
  const optimizer = new AdamW(params, {
    betas: section.betas,
    eps: section.eps,
    weightDecay: section.weight_decay,
    ...(section.lora.rank > 0
      ? {
          lrScale: loraLrScale(
            Object.keys(params),
            section.lora.lr_ratio,
            section.lora.modules_lr_ratio,
          ),
        }
      : {}),
  });
  const schedule = {
    lr: section.lr,
    minLr: section.min_lr,
    warmupRatio: section.warmup_ratio,
    totalSteps: Math.max(1, totalUpdates),
    kind: section.scheduler,
  };
  return { optimizer, lrAt: (step) => scheduledLr(step, schedule) };
}

/**
 * A LoRA run's learning-rate multipliers over the trained `names`: `ratio` for the adapters' B
 * matrices (LoRA+), 1 for the A matrices, `modulesRatio` for every other trained parameter (the
 * modules_to_save copies, a score head).
 */
export function loraLrScale(
  names: readonly string[],
  ratio: number,
  modulesRatio = 1,
): Record<string, number> {
  const scale = (name: string) => {
    if (name.endsWith('.lora_B.weight')) return ratio;
    if (name.endsWith('.lora_A.weight')) return 1;
    return modulesRatio;
  };
  return Object.fromEntries(names.map((n) => [n, scale(n)]));
}

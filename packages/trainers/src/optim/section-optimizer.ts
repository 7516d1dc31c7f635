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
 * `totalUpdates` optimizer steps.
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

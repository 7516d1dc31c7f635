import { z } from 'zod';
import { pairDataSection } from './data-config.js';
import { modelSection } from './model-section.js';
import { parallelOptions } from './parallel-config.js';
import { option } from './option.js';
import { trainerSection } from './trainer-config.js';

/**
 * `rl2 dpo`: Direct Preference Optimization (https://arxiv.org/abs/2305.18290),
 * r = beta * sum(logp - ref_logp) per sequence, loss = -logsigmoid(r_chosen - r_rejected).
 */
export const dpoConfigSchema = z.strictObject({
  data: pairDataSection(),
  actor: z.strictObject({
    ...modelSection({ lr: 5e-7, warmupRatio: 0.1 }),
    ...parallelOptions(),
    beta: option(z.number().positive(), 0.1, 'DPO temperature on the log-ratio rewards'),
    preference_loss: option(
      z.enum(['dpo', 'ipo', 'simpo']),
      'dpo',
      'dpo: -logsigmoid(margin); ipo: (margin/beta - 1/(2 beta))^2 (arXiv 2310.12036); simpo: ' +
        'length-normalised, no reference (arXiv 2405.14734)',
    ),
    label_smoothing: option(
      z.number().min(0).lt(0.5),
      0,
      'conservative DPO: assumed probability that a label is flipped',
    ),
    simpo_gamma: option(
      z.number().nonnegative().nullable(),
      null,
      'SimPO target margin (null: 0.5 * beta)',
    ),
    nll_coef: option(
      z.number().nonnegative(),
      0,
      "RPO: weight of the chosen replies' per-token NLL added to the loss",
    ),
  }),
  ref_actor: z.strictObject({
    model_name: option(
      z.string().min(1).nullable(),
      '${actor.model_name}',
      'frozen reference model (default: the initial actor)',
    ),
  }),
  trainer: trainerSection('dpo'),
});

export type DpoConfig = z.infer<typeof dpoConfigSchema>;

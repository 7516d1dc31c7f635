import { z } from 'zod';
import { dataSection } from './data-config.js';
import { modelSection } from './model-config.js';
import { option } from './option.js';
import { trainerSection } from './trainer-config.js';

/**
 * `rl2 dpo`: Direct Preference Optimization (https://arxiv.org/abs/2305.18290),
 * r = beta * sum(logp - ref_logp) per sequence, loss = -logsigmoid(r_chosen - r_rejected).
 */
export const dpoConfigSchema = z.strictObject({
  data: dataSection('pair'),
  actor: z.strictObject({
    ...modelSection({ lr: 5e-7, warmupRatio: 0.1 }),
    beta: option(z.number().positive(), 0.1, 'DPO temperature on the log-ratio rewards'),
    loss_type: option(
      z.enum(['sigmoid', 'ipo', 'hinge']),
      'sigmoid',
      'sigmoid: DPO; ipo: (margin - 1/(2 beta))^2 (arXiv 2310.12036); hinge: relu(1 - margin) (SLiC)',
    ),
    label_smoothing: option(z.number().min(0).lt(0.5), 0, 'conservative DPO: assumed probability that a label is flipped'),
    apply_len_norm: option(z.boolean(), false, 'divide each sequence log-ratio by its token count'),
  }),
  ref_actor: z.strictObject({
    model_name: option(z.string().min(1).nullable(), '${actor.model_name}', 'frozen reference model (default: the initial actor)'),
  }),
  trainer: trainerSection('dpo'),
});

export type DpoConfig = z.infer<typeof dpoConfigSchema>;

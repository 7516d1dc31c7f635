import { z } from 'zod';
import { sftDataSection } from './data-config.js';
import { modelSection } from './model-section.js';
import { parallelOptions } from './parallel-config.js';
import { option } from './option.js';
import { trainerSection } from './trainer-config.js';

/** `rl2 sft`: supervised fine-tuning, loss = aggregate(-logp, action_mask, avg_level). */
export const sftConfigSchema = z.strictObject({
  data: sftDataSection(),
  actor: z.strictObject({
    ...modelSection({ lr: 1e-5 }),
    ...parallelOptions(),
    avg_level: option(
      z.enum(['token', 'sequence']),
      'token',
      'loss mean over all tokens, or over per-sequence means',
    ),
  }),
  trainer: trainerSection('sft'),
});

export type SftConfig = z.infer<typeof sftConfigSchema>;

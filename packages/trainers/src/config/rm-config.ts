import { z } from 'zod';
import { pairDataSection } from './data-config.js';
import { modelSection } from './model-section.js';
import { parallelOptions } from './parallel-config.js';
import { trainerSection } from './trainer-config.js';

/** `rl2 rm`: Bradley-Terry reward model, loss = -logsigmoid(r_chosen - r_rejected) per pair. */
export const rmConfigSchema = z.strictObject({
  data: pairDataSection(),
  critic: z.strictObject({ ...modelSection({ lr: 5e-6 }), ...parallelOptions() }),
  trainer: trainerSection('rm'),
});

export type RmConfig = z.infer<typeof rmConfigSchema>;

import type { SftConfig } from '../config/sft-config.js';
import { openRun } from '../run/open-run.js';
import type { RunIo } from '../run/run-session.js';
import { type RunResult, runTrainingLoop } from '../run/train-loop.js';
import { sftObjective } from './sft-objective.js';

/** `rl2 sft`: supervised fine-tuning of `actor.model_name` on `data.train.path`. */
export async function runSft(config: SftConfig, io: RunIo = {}): Promise<RunResult> {
  const { model, spec } = await openRun('sft', config, 'actor', config.actor, io);
  return runTrainingLoop({
    ...spec,
    objective: sftObjective(model, {
      avgLevel: config.actor.avg_level,
      recompute: config.actor.gradient_checkpointing,
    }),
  });
}

import type { RmConfig } from '../config/rm-config.js';
import { openRun } from '../run/open-run.js';
import type { RunIo } from '../run/run-session.js';
import { type RunResult, runTrainingLoop } from '../run/train-loop.js';
import { rmObjective } from './rm-objective.js';

/**
 * `rl2 rm`: a Bradley-Terry reward model. `critic.model_name` may be a causal LM: it is
 * loaded with a value head (`*ForTokenClassification`, score initialised to zero).
 */
export async function runRm(config: RmConfig, io: RunIo = {}): Promise<RunResult> {
  const { model, spec } = await openRun('rm', config, 'critic', config.critic, io, {
    head: 'value',
  });
  return runTrainingLoop({
    ...spec,
    objective: rmObjective(model, { recompute: config.critic.gradient_checkpointing }),
  });
}

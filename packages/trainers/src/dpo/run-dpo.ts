import type { DpoConfig } from '../config/dpo-config.js';
import { openRun } from '../run/open-run.js';
import { openModel } from '../run/run-setup.js';
import { trainModel } from '../parallel-model/trained-model.js';
import type { RunIo } from '../run/run-session.js';
import { type RunResult, runTrainingLoop } from '../run/train-loop.js';
import { dpoObjective } from './dpo-objective.js';

/**
 * `rl2 dpo`: preference optimisation of `actor.model_name` against the frozen
 * `ref_actor.model_name` (default: the same starting weights). SimPO loads no reference.
 */
export async function runDpo(config: DpoConfig, io: RunIo = {}): Promise<RunResult> {
  const { model, spec, lora } = await openRun('dpo', config, 'actor', config.actor, io);
  // with LoRA the reference is the base without the adapters: no second copy of the weights
  const refName = config.ref_actor.model_name ?? config.actor.model_name;
  const wantsRef = config.actor.preference_loss !== 'simpo';
  const refIsBase = wantsRef && lora !== undefined && refName === config.actor.model_name;
  const needsRef = wantsRef && !refIsBase;
  // the reference is laid out as the actor (tp shards, cp split, ZeRO-3 shards), so its passes run in step
  const ref = needsRef
    ? trainModel(
        (
          await openModel(
            config.ref_actor.model_name ?? config.actor.model_name,
            'ref_actor.model_name',
          )
        ).model,
        spec.layout,
        'actor',
      )
    : undefined;
  await ref?.ready();
  try {
    return await runTrainingLoop({
      ...spec,
      objective: dpoObjective(model, refIsBase ? lora?.base : ref?.model, {
        variant: config.actor.preference_loss,
        beta: config.actor.beta,
        labelSmoothing: config.actor.label_smoothing,
        simpoGamma: config.actor.simpo_gamma,
        nllCoef: config.actor.nll_coef,
        recompute: config.actor.gradient_checkpointing,
      }),
    });
  } finally {
    ref?.dispose();
  }
}

import { resolveCheckpoint } from '../checkpoint/resolve-checkpoint.js';
import type { DpoConfig } from '../config/dpo-config.js';
import { loadItems } from '../dataset/load-items.js';
import { modelSaver, openModel, openTokenizer, paramRecord, startEngine, startingWeights } from '../loop/run-setup.js';
import { type RunIo, type RunResult, runTrainingLoop } from '../loop/train-loop.js';
import { dpoObjective } from './dpo-objective.js';

/**
 * `rl2 dpo`: preference optimisation of `actor.model_name` against the frozen
 * `ref_actor.model_name` (default: the same starting weights). SimPO loads no reference.
 */
export async function runDpo(config: DpoConfig, io: RunIo = {}): Promise<RunResult> {
  await startEngine(config.trainer, io);
  const tokenizerDir = config.actor.tokenizer_name ?? config.actor.model_name;
  const tokenizer = await openTokenizer(tokenizerDir, config.actor.tokenizer_name ? 'actor.tokenizer_name' : 'actor.model_name');
  const { train, test } = await loadItems('dpo', tokenizer, config.data, config.trainer.seed);
  const resumeFrom = resolveCheckpoint(config.trainer.save_dir, config.trainer.load_ckpt_from);
  const { model, generationConfig } = await openModel(startingWeights(config.actor.model_name, resumeFrom), 'actor.model_name');
  const needsRef = config.actor.preference_loss !== 'simpo';
  const ref = needsRef ? (await openModel(config.ref_actor.model_name ?? config.actor.model_name, 'ref_actor.model_name')).model : undefined;
  return runTrainingLoop({
    kind: 'dpo',
    trainer: config.trainer,
    model: config.actor,
    modelKey: 'actor',
    batchSize: config.data.train.batch_size,
    testBatchSize: config.data.test.batch_size,
    shuffle: config.data.shuffle,
    train,
    test,
    params: paramRecord(model),
    objective: dpoObjective(model, ref, {
      variant: config.actor.preference_loss,
      beta: config.actor.beta,
      labelSmoothing: config.actor.label_smoothing,
      simpoGamma: config.actor.simpo_gamma,
      nllCoef: config.actor.nll_coef,
      recompute: config.actor.gradient_checkpointing,
    }),
    saveModel: modelSaver(model, generationConfig, tokenizerDir),
    resumeFrom,
    config,
    io,
  });
}

import { resolveCheckpoint } from '../checkpoint/resolve-checkpoint.js';
import type { RmConfig } from '../config/rm-config.js';
import { loadItems } from '../dataset/load-items.js';
import { modelSaver, openModel, openTokenizer, paramRecord, startEngine, startingWeights } from '../loop/run-setup.js';
import { type RunIo, type RunResult, runTrainingLoop } from '../loop/train-loop.js';
import { rmObjective } from './rm-objective.js';

/**
 * `rl2 rm`: a Bradley-Terry reward model. `critic.model_name` may be a causal LM: it is
 * loaded with a value head (`*ForTokenClassification`, score initialised to zero).
 */
export async function runRm(config: RmConfig, io: RunIo = {}): Promise<RunResult> {
  await startEngine(config.trainer, io);
  const tokenizerDir = config.critic.tokenizer_name ?? config.critic.model_name;
  const tokenizer = await openTokenizer(tokenizerDir, config.critic.tokenizer_name ? 'critic.tokenizer_name' : 'critic.model_name');
  const { train, test } = await loadItems('rm', tokenizer, config.data, config.trainer.seed);
  const resumeFrom = resolveCheckpoint(config.trainer.save_dir, config.trainer.load_ckpt_from);
  const { model, generationConfig } = await openModel(startingWeights(config.critic.model_name, resumeFrom), 'critic.model_name', { head: 'value' });
  return runTrainingLoop({
    kind: 'rm',
    trainer: config.trainer,
    model: config.critic,
    modelKey: 'critic',
    batchSize: config.data.train.batch_size,
    testBatchSize: config.data.test.batch_size,
    shuffle: config.data.shuffle,
    train,
    test,
    params: paramRecord(model),
    objective: rmObjective(model, { recompute: config.critic.gradient_checkpointing }),
    saveModel: modelSaver(model, generationConfig, tokenizerDir),
    resumeFrom,
    config,
    io,
  });
}

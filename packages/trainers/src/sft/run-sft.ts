import { resolveCheckpoint } from '../checkpoint/resolve-checkpoint.js';
import type { SftConfig } from '../config/sft-config.js';
import { loadItems } from '../dataset/load-items.js';
import { modelSaver, openModel, openTokenizer, paramRecord, startEngine, startingWeights } from '../loop/run-setup.js';
import { type RunIo, type RunResult, runTrainingLoop } from '../loop/train-loop.js';
import { sftObjective } from './sft-objective.js';

/** `rl2 sft`: supervised fine-tuning of `actor.model_name` on `data.train.path`. */
export async function runSft(config: SftConfig, io: RunIo = {}): Promise<RunResult> {
  await startEngine(config.trainer, io);
  const tokenizerDir = config.actor.tokenizer_name ?? config.actor.model_name;
  const tokenizer = await openTokenizer(tokenizerDir, config.actor.tokenizer_name ? 'actor.tokenizer_name' : 'actor.model_name');
  const { train, test, dropped } = await loadItems('sft', tokenizer, config.data, config.trainer.seed);
  if (dropped > 0) {
    (io.stdout ?? process.stdout).write(`rl2 sft: skipped ${dropped} sequence(s) with no trained token left (no assistant turn, or cut by data.*.max_length)\n`);
  }
  const resumeFrom = resolveCheckpoint(config.trainer.save_dir, config.trainer.load_ckpt_from);
  const { model, generationConfig } = await openModel(startingWeights(config.actor.model_name, resumeFrom), 'actor.model_name');
  return runTrainingLoop({
    kind: 'sft',
    trainer: config.trainer,
    model: config.actor,
    modelKey: 'actor',
    batchSize: config.data.train.batch_size,
    testBatchSize: config.data.test.batch_size,
    shuffle: config.data.shuffle,
    train,
    test,
    params: paramRecord(model),
    objective: sftObjective(model, { avgLevel: config.actor.avg_level, recompute: config.actor.gradient_checkpointing }),
    saveModel: modelSaver(model, generationConfig, tokenizerDir),
    resumeFrom,
    config,
    io,
  });
}

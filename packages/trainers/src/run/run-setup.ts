import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { type Tokenizer, downloadProgressLines, loadTokenizer } from '@rl2/data';
import { type EngineBackendChoice, initEngine } from '@rl2/engine';
import {
  type DecoderModel,
  type GenerationConfig,
  type LoadModelOptions,
  type ParamMap,
  checkTokenizerFits,
  createDecoderModel,
  loadModel,
  removeStaleSaves,
  resolveModelDir,
  saveModel as saveHfModel,
} from '@rl2/models';
import { readLaunchEnv } from '@rl2/parallel';
import {
  STARTED_FROM_KEY,
  checkResumedModel,
  modelIdentity,
} from '../checkpoint/model-identity.js';
import { resolveCheckpoint } from '../checkpoint/resolve-checkpoint.js';
import type { ModelSection, TrainerSection } from '../config/sections.js';
import { TrainersError } from '../errors.js';
import { copyTokenizerFiles } from '../model-init/tokenizer-files.js';
import type { RunIo } from './run-session.js';
import { lockSaveDir } from './save-dir-lock.js';

/**
 * Starts the tensor engine named by `trainer.backend` / `trainer.threads` for training (so `auto`
 * never lands on stock wasm, which cannot train, and `wasm` is refused with the reason),
 * logging its line to the run's output.
 */
export async function startEngine(
  trainer: Pick<TrainerSection, 'backend' | 'threads'>,
  io: RunIo,
): Promise<void> {
  const out = io.stdout ?? process.stdout;
  // ranks sharing a node share its cores: all cores / LOCAL_WORLD_SIZE each unless set explicitly
  const localRanks = readLaunchEnv().localWorldSize;
  const threads =
    trainer.threads ??
    (process.env.RL2_THREADS || localRanks === 1
      ? undefined
      : Math.max(1, Math.floor(availableParallelism() / localRanks)));
  await initEngine({
    backend: trainer.backend as EngineBackendChoice,
    ...(threads ? { threads } : {}),
    training: true,
    logger: (line) => out.write(`${line}\n`),
  });
}

/**
 * The checkpoint to resume from (`trainer.load_ckpt_from`), once the writing rank (world rank 0)
 * has locked the run folder against a second run writing there (see `lockSaveDir`; released
 * when the run's session closes or the process exits) and cleaned it of what a killed save left there, on a fresh start and on a resume
 * alike (`.tmp-*` / `.old-*` of processes that are gone; a save killed between its two renames
 * gets its folder back). `say` gets a line naming what was removed.
 */
export function openSaveDir(
  trainer: Pick<TrainerSection, 'save_dir' | 'load_ckpt_from'>,
  rank: number,
  say: (line: string) => void,
): string | undefined {
  if (rank === 0) {
    lockSaveDir(trainer.save_dir, say);
    const removed = removeStaleSaves(trainer.save_dir);
    if (removed.length > 0)
      say(
        `removed ${removed.length} unfinished save(s) left in ${trainer.save_dir} by a killed run: ${removed.join(', ')}`,
      );
  }
  return resolveCheckpoint(trainer.save_dir, trainer.load_ckpt_from);
}

/** Download progress of hub models, as lines on stderr (where huggingface_hub's bars go). */
const hubProgress = () => ({
  onProgress: downloadProgressLines((line) => process.stderr.write(`${line}\n`)),
});

/** Loads the tokenizer at `dir` (a folder or a hub id); a failure names the config key to fix. */
export async function openTokenizer(dir: string, key: string): Promise<Tokenizer> {
  try {
    return await loadTokenizer(dir, hubProgress());
  } catch (err) {
    throw new TrainersError('BAD_DATA', `${key}=${dir}: ${(err as Error).message}`);
  }
}

/** Loads a HF checkpoint folder or hub id (downloaded into the HF cache); a failure names the config key to fix. */
export async function openModel(
  dir: string,
  key: string,
  options: LoadModelOptions = {},
): Promise<{ model: DecoderModel; generationConfig?: GenerationConfig }> {
  try {
    return await loadModel(dir, { hub: hubProgress(), ...options });
  } catch (err) {
    throw new TrainersError('CHECKPOINT', `${key}=${dir}: ${(err as Error).message}`);
  }
}

/**
 * Fails at start, naming both keys, files and sizes, when the tokenizer has ids the model has
 * no embedding row for (it used to surface as an id out of range at the first forward).
 */
export function checkTokenizerFitsModel(
  tokenizer: Tokenizer,
  model: DecoderModel,
  at: { tokenizerKey: string; tokenizerDir: string; modelKey: string; modelDir: string },
): void {
  try {
    checkTokenizerFits(tokenizer.vocabSize, model.config, at);
  } catch (err) {
    throw new TrainersError(
      'CHECKPOINT',
      `${at.tokenizerKey}=${at.tokenizerDir} does not fit ${at.modelKey}=${at.modelDir}: ${(err as Error).message}`,
    );
  }
}

/**
 * Folder of the weights to start from: the checkpoint's `folder` (model/, or critic/ of a PPO
 * checkpoint) when resuming, checked to hold the model `key` names (see `checkResumedModel`),
 * else the configured model.
 */
export function startingWeights(
  modelName: string,
  resumeFrom: string | undefined,
  key: string,
  folder = 'model',
): string {
  if (!resumeFrom) return modelName;
  const saved = join(resumeFrom, folder);
  checkResumedModel(saved, modelName, key);
  return saved;
}

/**
 * Writes the HF model files and the tokenizer next to them (what `from_pretrained` needs) in
 * the section's `save_dtype` and `max_shard_size`, config.json naming the section's
 * `model_name`; `params` replaces the model's own (the full tensors gathered from
 * tensor-parallel shards).
 */
export function modelSaver(
  model: DecoderModel,
  generationConfig: GenerationConfig | undefined,
  tokenizerDir: string,
  format: Pick<ModelSection, 'model_name' | 'save_dtype' | 'max_shard_size'>,
) {
  // config.json records the model the run started from, which a resume checks
  const config = {
    ...model.config,
    raw: { ...model.config.raw, [STARTED_FROM_KEY]: modelIdentity(format.model_name) },
  };
  let tokenizerFolder: string | undefined; // a hub id's cached snapshot, found on the first save
  return async (dir: string, params: ParamMap = model.params) => {
    tokenizerFolder ??= await resolveModelDir(tokenizerDir, { tokenizerOnly: true });
    const from = tokenizerFolder;
    await saveHfModel(dir, createDecoderModel(config, params), {
      ...(generationConfig ? { generationConfig } : {}),
      ...(format.save_dtype ? { dtype: format.save_dtype } : {}),
      maxShardSize: format.max_shard_size,
      addFiles: (workDir) => copyTokenizerFiles(from, workDir),
    });
  };
}

import { join } from 'node:path';
import type { DecoderModel, LoadModelOptions, LoraModel } from '@rl2/models';
import { readLaunchEnv } from '@rl2/parallel';
import type { ModelSection, TrainerSection } from '../config/sections.js';
import type { BadRowPolicy } from '@rl2/data';
import { dataMetrics, describeCounts } from '../dataset/data-counts.js';
import { type ItemKind, type SplitConfig, loadItems } from '../dataset/load-items.js';
import { microBatchBudget, planRankLayout } from '../parallel-model/rank-layout.js';
import { trainModel } from '../parallel-model/trained-model.js';
import { openDataParallel } from '../parallel-model/data-parallel.js';
import {
  checkTokenizerFitsModel,
  modelSaver,
  openModel,
  openSaveDir,
  openTokenizer,
  startEngine,
  startingWeights,
} from './run-setup.js';
import type { RunIo } from './run-session.js';
import { releaseSaveDir } from './save-dir-lock.js';
import {
  checkFrozenBase,
  describeFrozenBase,
  describeFrozenShard,
  frozenBaseOf,
  loraSaver,
  loraSpecOf,
} from '../lora/lora-run.js';
import { layOutLora } from '../lora/lay-out-lora.js';
import type { LoopSpec } from './train-loop.js';

/** The config parts every SFT/RM/DPO run reads before its objective. */
export interface RunConfig {
  readonly trainer: TrainerSection;
  readonly data: {
    train: SplitConfig & { batch_size: number };
    test: SplitConfig & { batch_size: number };
    test_ratio: number;
    shuffle: boolean;
    on_bad_row?: BadRowPolicy;
  };
}

/** What {@link openRun} opened: the model to build the objective on and the rest of the loop's spec. */
export interface OpenedRun {
  /** This rank's model: tp shards, cp split and ZeRO-3 shards when the section asks for them (see `trainModel`). */
  readonly model: DecoderModel;
  /** With `<key>.lora.rank` > 0: the adapters on the frozen base (`lora.base` is the model without them). */
  readonly lora?: LoraModel;
  /** Sequences dropped while tokenizing (no trained token left), for the run's first line. */
  readonly dropped: number;
  readonly spec: Omit<LoopSpec<unknown>, 'objective'>;
}

/**
 * The steps SFT, RM and DPO share before their objective: start the engine, load the tokenizer,
 * tokenize the data, find the checkpoint to resume from, load the model (`key` names the
 * config section, `actor` or `critic`, in errors), join the launcher's world and lay the model
 * out on it (`tp_size`, `cp_size`, `ddp_size`). The loop closes the world when it ends.
 */
export async function openRun(
  kind: ItemKind,
  config: RunConfig,
  key: 'actor' | 'critic',
  section: ModelSection,
  io: RunIo,
  modelOptions: LoadModelOptions = {},
): Promise<OpenedRun> {
  const { trainer, data } = config;
  const loraSpec = loraSpecOf(section);
  await startEngine(trainer, io);
  const tokenizerDir = section.tokenizer_name ?? section.model_name;
  const tokenizer = await openTokenizer(
    tokenizerDir,
    section.tokenizer_name ? `${key}.tokenizer_name` : `${key}.model_name`,
  );
  // lengths are checked here, once, against the micro-batch budget: not mid-epoch when a batch is packed
  const { train, test, dropped, counts } = await loadItems(
    kind,
    tokenizer,
    data,
    trainer.seed,
    microBatchBudget(section, key),
  );
  const out = io.stdout ?? process.stdout;
  const resumeFrom = openSaveDir(trainer, readLaunchEnv(process.env).rank, (line) =>
    out.write(`rl2 ${kind}: ${line}\n`),
  );
  const { model: full, generationConfig } = await unlockOnError(
    trainer,
    openModel(
      // a LoRA checkpoint holds the adapters: the base is loaded as configured
      loraSpec
        ? section.model_name
        : startingWeights(section.model_name, resumeFrom, `${key}.model_name`),
      `${key}.model_name`,
      { ...modelOptions, frozenBase: frozenBaseOf(section, key, loraSpec) },
    ),
  );
  await unlockOnError(trainer, (async () => checkFrozenBase(full, section, key))());
  if (full.frozen)
    out.write(`rl2 ${kind}: ${describeFrozenBase(full.frozen, `${key}.lora.base_dtype`)}\n`);
  const modelDir = resumeFrom && !loraSpec ? join(resumeFrom, 'model') : section.model_name;
  await unlockOnError(
    trainer,
    (async () =>
      checkTokenizerFitsModel(tokenizer, full, {
        tokenizerKey: section.tokenizer_name ? `${key}.tokenizer_name` : `${key}.model_name`,
        tokenizerDir,
        modelKey: `${key}.model_name`,
        modelDir,
      }))(),
  );
  const world = await unlockOnError(trainer, openDataParallel());
  try {
    if (world.rank === 0)
      for (const line of describeCounts(
        counts,
        (split) => (split === 'train' ? data.train : data.test).max_length,
      ))
        out.write(`rl2 ${kind}: ${line}\n`);
    const layout = planRankLayout(world, section, key);
    const laidOutLora = loraSpec
      ? layOutLora(full, layout, loraSpec, section, key, {
          seed: trainer.seed,
          ...(resumeFrom ? { resumeFrom } : {}),
        })
      : undefined;
    const trained = laidOutLora?.trained ?? trainModel(full, layout, key);
    await trained.ready();
    const lora = laidOutLora?.lora;
    if (layout.tp && lora?.base.frozen)
      out.write(`rl2 ${kind}: ${describeFrozenShard(lora.base.frozen, layout.tp)}\n`);
    const model = trained.model;
    const saveModel = modelSaver(lora?.base ?? model, generationConfig, tokenizerDir, section);
    return {
      model,
      ...(lora ? { lora } : {}),
      dropped,
      spec: {
        kind,
        trainer,
        model: section,
        modelKey: key,
        batchSize: data.train.batch_size,
        testBatchSize: data.test.batch_size,
        shuffle: data.shuffle,
        train,
        test,
        trained,
        saveModel: lora ? loraSaver(lora, section, saveModel) : saveModel,
        ...(lora ? { lora } : {}),
        resumeFrom,
        config,
        io,
        layout,
        owned: true,
        dataMetrics: dataMetrics(counts),
      },
    };
  } catch (err) {
    await world.close();
    releaseSaveDir(trainer.save_dir);
    throw err;
  }
}

/** `step`'s value; when it fails the run never starts, and the run folder's lock goes. */
async function unlockOnError<T>(trainer: TrainerSection, step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (err) {
    releaseSaveDir(trainer.save_dir);
    throw err;
  }
}

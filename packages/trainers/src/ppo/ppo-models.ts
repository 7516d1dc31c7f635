import type { DecoderModel, GenerationConfig, ParamMap } from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import * as tf from '@tensorflow/tfjs-core';
import type { DataParallel } from '../parallel-model/data-parallel.js';
import { ONE_PROCESS, planRankLayout } from '../parallel-model/rank-layout.js';
import { trainModel } from '../parallel-model/trained-model.js';
import { modelSaver, openModel, startingWeights } from '../run/run-setup.js';
import { type loadPpoCheckpoint, savePpoCheckpoint } from './ppo-checkpoint.js';
import type { PpoConfig } from './ppo-config.js';
import { PpoWorker, ppoWorkerOptions } from './ppo-worker.js';
import { type PpoLora, ppoLora, usesLora } from '../lora/ppo-lora.js';

/** The models of a PPO run as this rank holds them (RL2's actor, ref_actor and critic workers). */
export interface PpoModels {
  readonly actor: PpoWorker;
  /** The frozen reference (kl.coef > 0), laid out as the actor. */
  readonly ref?: PpoWorker;
  /** The critic (adv.estimator=gae), laid out by critic.*. */
  readonly critic?: PpoWorker;
  /**
   * The full actor the embedded engine generates with (rollout.engine=embedded); undefined with
   * rollout.engine=sglang, where no rank keeps a full copy (the servers hold the weights).
   */
  readonly fullActor?: DecoderModel;
  /**
   * actor.tp_size > 1 without FSDP and the embedded engine: the actor's tp shards and their
   * group, which generate together (tensor-parallel generation); no rank keeps a full copy.
   */
  readonly tpActor?: { readonly model: DecoderModel; readonly tp: ProcessGroup };
  readonly generationConfig?: GenerationConfig;
  /** After an actor update under tp or FSDP: the full actor gathered again from the shards (no-op without a full actor). */
  refreshFullActor(): void;
  /**
   * Writes the full actor as a HF folder with the tokenizer files: a collective when the actor
   * is sharded and no full copy is kept (every rank calls it, the shards are gathered), rank 0
   * (`isMain`) writes.
   */
  writeActor(dir: string, isMain: boolean): Promise<void>;
  /**
   * With actor.lora.rank > 0 and no actor.lora.modules_to_save: writes the actor's PEFT adapter folder (rank 0
   * writes), what SGLang servers load.
   */
  writeActorAdapter?: (dir: string, isMain: boolean) => Promise<void>;
  /**
   * The checkpoint `dir` (see `savePpoCheckpoint`): every rank joins the gathers of sharded
   * optimizer state and critic weights, rank 0 (`isMain`) writes.
   */
  writeCheckpoint(
    dir: string,
    isMain: boolean,
    state: Pick<
      Parameters<typeof savePpoCheckpoint>[1],
      'step' | 'totalSteps' | 'lr' | 'klCoef' | 'stream'
    >,
  ): Promise<void>;
  dispose(): void;
}

/** The model sections of a PPO run, as `ppoModelSections` picks them from the config. */
export interface PpoModelSections {
  readonly actor: PpoConfig['actor'];
  /** ref_actor.*: the frozen reference, when kl.coef > 0. */
  readonly ref?: PpoConfig['ref_actor'];
  /** critic.*: the critic, when adv.estimator=gae. */
  readonly critic?: PpoConfig['critic'];
  /** rollout.engine: who generates with the actor (the embedded engine needs a full copy or the tp shards). */
  readonly engine: PpoConfig['rollout']['engine'];
  /** trainer.seed: new LoRA adapters are initialised from it. */
  readonly seed: number;
}

/** The models a PPO config asks for: the reference with kl.coef > 0, the critic with adv.estimator=gae. */
export function ppoModelSections(config: PpoConfig): PpoModelSections {
  return {
    actor: config.actor,
    ...(config.kl.coef > 0 ? { ref: config.ref_actor } : {}),
    ...(config.adv.estimator === 'gae' ? { critic: config.critic } : {}),
    engine: config.rollout.engine,
    seed: config.trainer.seed,
  };
}

/**
 * Loads the actor (from the checkpoint when resuming), the reference and the critic and lays
 * them out on the ranks: the actor and its reference by actor.{tp,cp,ddp}_size, the critic by
 * critic.*. With the embedded engine and actor tp alone the tp group generates with its shards
 * (`tpActor`); with FSDP the full actor stays alongside the shards and the engine generates
 * with it; with SGLang no rank keeps one (`writeActor` gathers the shards).
 * Optimizer states come back from `saved`.
 */
export async function openPpoModels(
  sections: PpoModelSections,
  dp: DataParallel,
  totalSteps: number,
  resumeFrom?: string,
  saved?: ReturnType<typeof loadPpoCheckpoint>,
): Promise<PpoModels> {
  const { actor: a, critic: c } = sections;
  const tokenizerDir = a.tokenizer_name ?? a.model_name;
  const actorLayout = planRankLayout(dp, a, 'actor');
  const criticLayout = c ? planRankLayout(dp, c, 'critic') : ONE_PROCESS;
  const full = await openModel(
    usesLora(a) ? a.model_name : startingWeights(a.model_name, resumeFrom, 'actor.model_name'),
    'actor.model_name',
  );
  // the embedded engine generates with the tp shards themselves under tp alone, else with a
  // full copy; SGLang servers hold their own
  const tpGeneration =
    sections.engine === 'embedded' && actorLayout.tp !== undefined && !actorLayout.fsdp;
  const keepFull = sections.engine === 'embedded' && !tpGeneration;
  // LoRA: the worker trains the adapters, the engine generates with base + adapters
  const actorLora = ppoLora(
    full.model,
    actorLayout,
    a,
    'actor',
    placement(sections.seed, resumeFrom),
    {
      keepFull,
    },
  );
  const trainedActor =
    actorLora?.trained ?? trainModel(full.model, actorLayout, 'actor', { keepFull });
  // under FSDP the engine's full copy gets the gathered adapters (refreshed after each step)
  const fullLora =
    actorLora && keepFull && trainedActor.sharded ? actorLora.fullGenerator(full.model) : undefined;
  const generator = fullLora?.model ?? actorLora?.lora.model ?? full.model;
  const actorUpdates = (totalSteps - a.freeze_steps) * a.update_per_rollout;
  const actor = new PpoWorker(
    trainedActor,
    actorLayout,
    ppoWorkerOptions(
      a,
      'actor',
      trainedActor,
      actorUpdates,
      actorLora && { lora: actorLora.lora, seed: sections.seed },
    ),
  );
  let ref: PpoWorker | undefined;
  if (sections.ref && actorLora && sections.ref.model_name === a.model_name) {
    // the reference is the actor's base without the adapters: no second copy of the weights
    const base = actorLora.baseWorkerModel();
    ref = new PpoWorker(base, actorLayout, ppoWorkerOptions(a, 'actor', base));
  } else if (sections.ref) {
    const loaded = await openModel(sections.ref.model_name, 'ref_actor.model_name');
    const trainedRef = trainModel(loaded.model, actorLayout, 'actor');
    ref = new PpoWorker(trainedRef, actorLayout, ppoWorkerOptions(a, 'actor', trainedRef));
  }
  let criticLora: PpoLora | undefined;
  let critic: PpoWorker | undefined;
  if (c) {
    const loaded = await openModel(
      usesLora(c)
        ? c.model_name
        : startingWeights(c.model_name, resumeFrom, 'critic.model_name', 'critic'),
      'critic.model_name',
      { head: 'value' },
    );
    criticLora = ppoLora(
      loaded.model,
      criticLayout,
      c,
      'critic',
      placement(sections.seed + 1, resumeFrom),
    );
    const trainedCritic = criticLora?.trained ?? trainModel(loaded.model, criticLayout, 'critic');
    critic = new PpoWorker(
      trainedCritic,
      criticLayout,
      ppoWorkerOptions(
        c,
        'critic',
        trainedCritic,
        totalSteps * c.update_per_rollout,
        criticLora && { lora: criticLora.lora, seed: sections.seed + 1 },
      ),
    );
  }
  // ZeRO-3 on a device backend: the shards are gathered before any pass (no-op elsewhere)
  for (const w of [actor, ref, critic]) await w?.trained.ready();
  if (saved) {
    actor.optimizer?.loadState(trainedActor.localOptimizerState(saved.actor));
    if (critic) critic.optimizer?.loadState(critic.trained.localOptimizerState(saved.critic));
  }
  const saveActor = modelSaver(full.model, full.generationConfig, tokenizerDir, a);
  /** The full actor's tensors: the kept copy, or gathered from the shards (a collective under tp or FSDP). */
  const fullActorParams = (): { params: ParamMap; dispose(): void } =>
    actorLora
      ? actorLora.merged()
      : keepFull
        ? { params: full.model.params, dispose: () => {} }
        : trainedActor.fullParams();
  const writeActor = async (dir: string, isMain: boolean) => {
    const gathered = fullActorParams();
    try {
      if (isMain) await saveActor(dir, gathered.params);
    } finally {
      gathered.dispose();
    }
  };
  return {
    actor,
    ref,
    critic,
    ...(keepFull ? { fullActor: generator } : {}),
    ...(tpGeneration && actorLayout.tp
      ? { tpActor: { model: trainedActor.model, tp: actorLayout.tp } }
      : {}),
    generationConfig: full.generationConfig,
    refreshFullActor: () => {
      if (fullLora) return fullLora.refresh();
      if (!keepFull || actorLora || (!actorLayout.tp && !trainedActor.sharded)) return;
      const gathered = trainedActor.fullParams();
      for (const [name, t] of gathered.params)
        (full.model.params.get(name) as tf.Variable).assign(t);
      gathered.dispose();
    },
    writeActor,
    // SGLang loads LoRA matrices only: with modules_to_save the sync pushes the merged actor (W + s B A, the copies)
    ...(actorLora && !actorLora.lora.spec.modulesToSave?.length
      ? {
          writeActorAdapter: (dir: string, isMain: boolean) => actorLora.writeAdapter(dir, isMain),
        }
      : {}),
    writeCheckpoint: async (dir, isMain, state) => {
      const actorState = await actor.checkpointState(isMain);
      const criticState = await critic?.checkpointState(isMain);
      // LoRA saves adapters (merged weights only with lora.save_merged): their tp shards gathered
      const actorFull = actorLora ? actorLora.trained.fullParams() : fullActorParams();
      const criticFull = critic?.trained.fullParams();
      try {
        if (!isMain || !actorState) return;
        await savePpoCheckpoint(dir, {
          ...state,
          actorOptimizer: { state: async () => actorState },
          ...(criticState ? { criticOptimizer: { state: async () => criticState } } : {}),
          saveActor: (d: string) =>
            actorLora
              ? actorLora.save(d, saveActor, actorFull.params)
              : saveActor(d, actorFull.params),
          ...(critic && c && criticFull
            ? {
                saveCritic: (d: string) => {
                  const saveCritic = modelSaver(
                    criticLora?.lora.base ?? critic.trained.model,
                    undefined,
                    tokenizerDir,
                    c,
                  );
                  return criticLora
                    ? criticLora.save(d, saveCritic, criticFull.params)
                    : saveCritic(d, criticFull.params);
                },
              }
            : {}),
        });
      } finally {
        actorFull.dispose();
        criticFull?.dispose();
      }
    },
    dispose: () => {
      for (const w of [actor, ref, critic]) w?.dispose();
      if (keepFull) tf.dispose([...full.model.params.values()]); // the full actor the engine generated with
      fullLora?.dispose();
    },
  };
}

/** Where a PPO model's LoRA adapters come from: `seed`, or the checkpoint. */
function placement(
  seed: number,
  resumeFrom: string | undefined,
): { seed: number; resumeFrom?: string } {
  return { seed, ...(resumeFrom ? { resumeFrom } : {}) };
}

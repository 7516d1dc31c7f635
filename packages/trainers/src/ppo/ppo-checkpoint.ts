import { dirname, join } from 'node:path';
import { type TrainerState, loadCheckpoint, saveCheckpoint } from '../checkpoint/trainer-state.js';
import type { AdamW, AdamWState } from '../optim/adamw.js';
import type { PromptStreamState } from './prompt-stream.js';

/**
 * trainer_state.json of a PPO checkpoint: the shared fields (the prompt stream's epoch,
 * cursor, order and RNG in the epoch/batchInEpoch/order/rng slots) plus the critic's
 * optimizer step count (it differs from the actor's with actor.freeze_steps).
 */
export interface PpoTrainerState extends Omit<TrainerState, 'trainer'> {
  readonly trainer: 'ppo';
  readonly criticOptimizerStep: number;
  /** The KL coefficient of the next step (adaptive with kl.target); absent in older checkpoints. */
  readonly klCoef?: number;
}

/** The checkpoint's trainer kind as the shared reader types it (the PPO state adds fields, it changes none). */
const PPO = 'ppo' as unknown as TrainerState['trainer'];
const CRITIC = 'critic/';

/**
 * Writes `dir` atomically with the shared checkpoint writer: `model/` (the actor, HF format),
 * `critic/` (HF token-classification model, GAE only), `optimizer.safetensors` (actor moments,
 * critic moments under `critic/`), `trainer_state.json`.
 */
export async function savePpoCheckpoint(
  dir: string,
  opts: {
    step: number;
    totalSteps: number;
    lr: number;
    klCoef: number;
    stream: PromptStreamState;
    actorOptimizer: Pick<AdamW, 'state'>;
    criticOptimizer?: Pick<AdamW, 'state'>;
    saveActor: (dir: string) => Promise<void>;
    saveCritic?: (dir: string) => Promise<void>;
  },
): Promise<void> {
  const actor = await opts.actorOptimizer.state();
  const critic = await opts.criticOptimizer?.state();
  const moments = { ...actor.moments };
  for (const [name, m] of Object.entries(critic?.moments ?? {})) moments[`${CRITIC}${name}`] = m;
  const state: PpoTrainerState = {
    version: 1,
    trainer: 'ppo',
    step: opts.step,
    totalSteps: opts.totalSteps,
    epoch: opts.stream.epoch,
    batchInEpoch: opts.stream.cursor,
    order: opts.stream.order,
    rng: opts.stream.rng,
    lr: opts.lr,
    savedAt: new Date().toISOString(),
    criticOptimizerStep: critic?.step ?? 0,
    klCoef: opts.klCoef,
  };
  await saveCheckpoint(dir, {
    state: state as unknown as TrainerState,
    optimizer: { step: actor.step, moments },
    saveModel: async (modelDir) => {
      await opts.saveActor(modelDir);
      if (opts.saveCritic) await opts.saveCritic(join(dirname(modelDir), 'critic'));
    },
  });
}

/** Reads a PPO checkpoint back: its state, the prompt stream and both optimizer states. */
export function loadPpoCheckpoint(dir: string): {
  state: PpoTrainerState;
  stream: PromptStreamState;
  actor: AdamWState;
  critic: AdamWState;
} {
  const saved = loadCheckpoint(dir, PPO);
  const state = saved.state as unknown as PpoTrainerState;
  const actor: AdamWState['moments'] = {};
  const critic: AdamWState['moments'] = {};
  for (const [name, m] of Object.entries(saved.optimizer.moments)) {
    if (name.startsWith(CRITIC)) critic[name.slice(CRITIC.length)] = m;
    else actor[name] = m;
  }
  return {
    state,
    stream: { epoch: state.epoch, cursor: state.batchInEpoch, order: state.order, rng: state.rng },
    actor: { step: saved.optimizer.step, moments: actor },
    critic: { step: state.criticOptimizerStep, moments: critic },
  };
}

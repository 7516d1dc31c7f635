import { join } from 'node:path';
import type { Tokenizer } from '@rl2/data';
import {
  type BatchStepper,
  type DecoderModel,
  type GenerationConfig,
  createGenerator,
  defaultWeightDtype,
  followTensorParallel,
  tensorParallelStepper,
} from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import {
  type Environment,
  type RolloutEngine,
  type RolloutPrompt,
  type RolloutRunner,
  type SamplingParams,
  createEmbeddedEngine,
  createRolloutRunner,
  createSGLangEngine,
} from '@rl2/rollout';
import { TrainersError } from '../errors.js';
import { prefixed } from '../metrics/prefixed.js';
import type { DataParallel } from '../parallel-model/data-parallel.js';
import { shareFromMain } from '../parallel-model/share-from-main.js';
import { checkSameRollout } from './check-same-rollout.js';
import { type RolloutShard, gatherRollout } from './gather-rollout.js';
import type { PpoConfig } from './ppo-config.js';
import type { PromptStream } from './prompt-stream.js';
import { sglangAdapterSync } from '../lora/sglang-adapter-sync.js';

/** The rollout side of `rl2 ppo` (RL2's Rollout worker): training steps, evaluations, weight sync. */
export interface PpoRollout {
  /** The training batch of step `step` (1-based), the same on every rank. */
  step(step: number): Promise<RolloutShard>;
  /** The test prompts at rollout.test_sampling_params: `test/*` metrics and the line to print (none without test prompts). */
  evaluate(step: number): Promise<{ values: Record<string, number>; line: string } | undefined>;
  /** Pushes the actor's weights to the engine (the embedded engine shares them: its cache is flushed). */
  syncWeights(): Promise<void>;
  close(): Promise<void>;
}

/** What the rollout takes of the run besides rollout.*: trainer.seed, trainer.save_dir, the sequence budget. */
export interface PpoRolloutRun {
  readonly seed: number;
  /** Where rollout.save_rollouts writes (`rollouts/` under it). */
  readonly saveDir: string;
  /** The longest a trajectory may grow (see `ppoSequenceBudget`). */
  readonly maxSequenceTokens: number;
}

/** What the rollout is built from besides the config. */
export interface PpoRolloutParts {
  /** The full actor the embedded engine generates with (unused with rollout.engine=sglang). */
  readonly actor?: DecoderModel;
  /** Tensor-parallel generation (embedded engine): this rank's actor shards and tp group; the group's rank 0 drives, the others follow. */
  readonly tpActor?: { readonly model: DecoderModel; readonly tp: ProcessGroup };
  readonly generationConfig?: GenerationConfig;
  readonly tokenizer: Tokenizer;
  readonly env: Environment;
  readonly stream: PromptStream;
  readonly testPrompts: readonly RolloutPrompt[];
  /** Writes the actor as a HF folder (the SGLang weight sync): every rank calls it, rank 0 writes. */
  readonly writeActor: (dir: string, isMain: boolean) => Promise<void>;
  /** With a LoRA actor: writes its PEFT adapter; the SGLang sync then loads only the adapter. */
  readonly writeAdapter?: (dir: string, isMain: boolean) => Promise<void>;
  readonly out: NodeJS.WriteStream;
}

/** rollout.*_sampling_params as the engine takes them (SGLang names; null stop dropped). */
function samplingParams(p: PpoConfig['rollout']['train_sampling_params']): SamplingParams {
  return {
    temperature: p.temperature,
    top_p: p.top_p,
    top_k: p.top_k,
    max_new_tokens: p.max_new_tokens,
    no_stop_trim: p.no_stop_trim,
    ...(p.stop ? { stop: p.stop } : {}),
  };
}

/**
 * The rollout engine of `rl2 ppo`. Embedded (default): the KV-cache continuous-batching
 * generator over the actor's own parameters (hybrid engine, DeepSpeed-Chat style), so an
 * optimizer step is seen by the next rollout with no copy. SGLang: servers at
 * rollout.server_urls, synced through /update_weights_from_disk.
 */
function createPpoEngine(
  cfg: PpoConfig['rollout'],
  actor: DecoderModel | undefined,
  generationConfig: GenerationConfig | undefined,
  tokenizer: Tokenizer,
  stepper?: BatchStepper,
): RolloutEngine {
  if (cfg.engine === 'sglang') {
    if (cfg.server_urls.length === 0) {
      throw new TrainersError(
        'INVALID_ARGUMENT',
        'rollout.engine=sglang needs rollout.server_urls=[http://host:port] (an SGLang server or `rl2 serve --model PATH`)',
      );
    }
    // servers started with --api-key: the key comes from RL2_API_KEY (kept out of config.yaml)
    const apiKey = process.env.RL2_API_KEY;
    return createSGLangEngine({ urls: cfg.server_urls, ...(apiKey ? { apiKey } : {}) });
  }
  if (!actor)
    throw new TrainersError(
      'INVALID_ARGUMENT',
      'rollout.engine=embedded needs the full actor to generate with',
    );
  const eos = generationConfig?.eosTokenIds?.length
    ? generationConfig.eosTokenIds
    : [tokenizer.eosTokenId];
  const generator = createGenerator(actor, {
    weightDtype: cfg.weight_dtype === 'auto' ? defaultWeightDtype(actor) : cfg.weight_dtype,
    maxBatch: cfg.max_batch,
    decode: (ids) => tokenizer.decode(ids),
    eosTokenIds: eos,
    ...(stepper ? { stepper } : {}),
  });
  return createEmbeddedEngine({ generator });
}

/** Fails early, naming every server, when an SGLang engine is not reachable. */
async function checkEngine(engine: RolloutEngine, r: PpoConfig['rollout']): Promise<void> {
  if (r.engine !== 'sglang') return;
  const health = await engine.health();
  if (health.ok) return;
  const down = health.backends
    .filter((b) => !b.ok)
    .map((b) => `${b.name}: ${b.error ?? 'unhealthy'}`);
  throw new TrainersError(
    'INVALID_ARGUMENT',
    `rollout.server_urls: no healthy SGLang server (${down.join('; ')}); start one (e.g. rl2 serve --model PATH) or fix the URLs`,
  );
}

/** `nextPrompts` that hands out `prompts` once, then nothing. */
function once(prompts: RolloutPrompt[]): (n: number) => RolloutPrompt[] {
  let left = prompts;
  return (n) => {
    const out = left.slice(0, n);
    left = left.slice(n);
    return out;
  };
}

/**
 * Starts the engine of rollout.engine (checking SGLang servers are up) and the rollout runner
 * over the prompt stream. Under several ranks: the embedded engine as in {@link ranksRollout};
 * SGLang servers are driven by rank 0 alone (its runner spreads the requests over
 * rollout.server_urls, or sends them to the router there), and every step's batch, every
 * evaluation and every failure reaches the other ranks from it. The weight sync gathers the
 * actor's shards on every rank, rank 0 writes the folder once and has every server reload it.
 */
export async function openPpoRollout(
  r: PpoConfig['rollout'],
  run: PpoRolloutRun,
  dp: DataParallel,
  parts: PpoRolloutParts,
): Promise<PpoRollout> {
  const { stream, out } = parts;
  const isMain = dp.rank === 0;
  const servers = r.engine === 'sglang';
  const tpGen = servers ? undefined : tensorParallelGeneration(parts.tpActor);
  // with SGLang the other ranks never talk to the servers; under tp generation only each tp group's rank 0 has an engine
  const engine =
    (servers && !isMain) || (tpGen && !tpGen.lead)
      ? undefined
      : createPpoEngine(
          r,
          tpGen ? parts.tpActor?.model : parts.actor,
          parts.generationConfig,
          parts.tokenizer,
          tpGen?.stepper,
        );
  const onServers = <T>(fn: (engine: RolloutEngine) => Promise<T>): Promise<T> =>
    shareFromMain(dp, () => fn(engine as RolloutEngine));
  if (servers) await onServers((e) => checkEngine(e, r));
  const runnerOptions = engine && {
    engine,
    env: parts.env,
    tokenizer: parts.tokenizer,
    nextPrompts: (n: number) => stream.next(n),
    promptsPerStep: r.train_prompts_per_rollout,
    responsesPerPrompt: r.responses_per_prompt,
    maxTurns: r.max_turns,
    // no trajectory outgrows a micro-batch (prompts were checked against it when loaded)
    maxSequenceTokens: run.maxSequenceTokens,
    sampling: samplingParams(r.train_sampling_params),
    evalSampling: samplingParams(r.test_sampling_params),
    concurrency: r.concurrency,
    // The runner seeds sample s of its g-th launched group with seed + (g * G + s) * 1000; a resumed
    // run continues the numbering where the checkpoint left it, so it samples what an
    // uninterrupted run would have.
    seed: run.seed + stream.consumed * r.responses_per_prompt * 1000,
    dynamicFiltering: r.dynamic_filtering,
    refill: r.refill,
    ...(r.max_groups_per_rollout
      ? {
          maxGroupsPerStep: Math.max(
            r.max_groups_per_rollout,
            r.train_prompts_per_rollout,
            r.groups_in_flight ?? 0,
          ),
        }
      : {}),
    ...(r.groups_in_flight ? { groupsInFlight: r.groups_in_flight } : {}),
    partialRollout: r.partial_rollout,
    onSampleError: r.on_sample_error,
    ...(r.save_rollouts && isMain ? { saveDir: join(run.saveDir, 'rollouts') } : {}),
    log: (line: string) => {
      if (isMain) out.write(`${line}\n`);
    },
  };
  const runner: RolloutRunner | undefined = runnerOptions && createRolloutRunner(runnerOptions);
  const evaluateHere = async (step: number) => {
    if (parts.testPrompts.length === 0 || !runner) return undefined;
    const res = await runner.evaluate(parts.testPrompts, step);
    const {
      rollout_s: _s,
      tokens_per_s: _t,
      groups: _g,
      carried_groups: _c,
      filtering_ratio: _f,
      ...shown
    } = res.metrics;
    const line =
      `evaluation @ step ${step}: reward ${shown['reward/mean'].toFixed(4)} ` +
      `(${parts.testPrompts.length} prompts, ` +
      `temperature ${r.test_sampling_params.temperature}), response ` +
      `length ${shown['response_length/mean'].toFixed(1)}`;
    return { values: prefixed('test', shown), line };
  };
  // under tp generation the tp group's rank 0 evaluates and hands the result to its group
  const evaluate = (step: number) =>
    tpGen && parts.testPrompts.length > 0
      ? tpGen.shared(() => evaluateHere(step))
      : evaluateHere(step);
  if (servers) {
    const main = runner as RolloutRunner;
    const adapters = parts.writeAdapter && sglangAdapterSync(parts.writeAdapter, r.weight_sync_dir);
    if (adapters) await onServers((e) => adapters(e, isMain)); // a resumed adapter from the first step
    return {
      step: (k) => shareFromMain(dp, () => main.step(k)),
      evaluate: (step) => shareFromMain(dp, () => evaluate(step)),
      syncWeights: async () => {
        if (adapters) return onServers((e) => adapters(e, isMain));
        await parts.writeActor(r.weight_sync_dir, isMain);
        await onServers((e) => e.updateWeights(r.weight_sync_dir));
      },
      close: async () => runner?.close(),
    };
  }
  const local = runner;
  const shardRunner = (share: RolloutPrompt[], seed: number) =>
    createRolloutRunner({
      ...(runnerOptions as NonNullable<typeof runnerOptions>),
      nextPrompts: once(share),
      promptsPerStep: Math.max(1, share.length),
      seed,
      ...(r.save_rollouts ? { saveDir: join(run.saveDir, 'rollouts', `rank-${dp.rank}`) } : {}),
      log: (line: string) => out.write(`${line}\n`),
    });
  const training = ranksRollout(dp, r, stream, run.seed, local, shardRunner, tpGen);
  return {
    step: (k) => training.step(k),
    evaluate,
    syncWeights: async () => engine?.flushCache(),
    close: async () => local?.close(),
  };
}

/** How a tp group generates together (see {@link tensorParallelGeneration}). */
interface TensorParallelGeneration {
  readonly lead: boolean;
  readonly size: number;
  readonly stepper?: BatchStepper;
  /** The lead runs `fn` while the others run its forwards; the lead's value (or error) on every rank of the group. */
  shared<T>(fn: () => Promise<T>): Promise<T>;
  /** As `shared`, but the others get `empty` instead of the lead's value. */
  led<T>(fn: () => Promise<T>, empty: T): Promise<T>;
}

/**
 * Tensor-parallel generation: the tp group's rank 0 (the lead) runs the engine over its shards
 * with `tensorParallelStepper`; during each rollout phase the other ranks run the forwards it
 * broadcasts (`followTensorParallel`) until it releases them.
 */
function tensorParallelGeneration(
  tpActor: PpoRolloutParts['tpActor'],
): TensorParallelGeneration | undefined {
  if (!tpActor) return undefined;
  const { model, tp } = tpActor;
  const lead = tp.rank === 0;
  const stepper = lead ? tensorParallelStepper(model, tp) : undefined;
  const group: DataParallel = {
    rank: tp.rank,
    size: tp.size,
    allReduceSum: (b) => tp.allReduce(b, 'sum'),
    close: async () => {},
    group: tp,
  };
  const led = async <T>(fn: () => Promise<T>, empty: T): Promise<T> => {
    if (!stepper) {
      await followTensorParallel(model, tp);
      return empty;
    }
    try {
      return await fn();
    } finally {
      stepper.close();
    }
  };
  return {
    lead,
    size: tp.size,
    ...(stepper ? { stepper } : {}),
    led,
    shared: async <T>(fn: () => Promise<T>) => {
      let outcome: { ok: T } | { error: unknown } | undefined;
      await led(async () => {
        try {
          outcome = { ok: await fn() };
        } catch (error) {
          outcome = { error };
        }
      }, undefined);
      return shareFromMain(group, async () => {
        if (outcome && 'error' in outcome) throw outcome.error;
        return (outcome as { ok: T }).ok;
      });
    },
  };
}

/** The rollout shard of a rank that rolled out nothing (a follower of tensor-parallel generation). */
function emptyShard(responsesPerPrompt: number): RolloutShard {
  return {
    batch: { sequences: [], trajectoryIds: [], responsesPerPrompt, trajectories: 0 },
    metrics: {
      'reward/mean': 0,
      'reward/std': 0,
      'response_length/mean': 0,
      'turns/mean': 0,
      length_clip_ratio: 0,
      samples: 0,
      failures: 0,
      env_errors: 0,
      env_timeouts: 0,
      engine_errors: 0,
      filtering_ratio: 0,
      groups: 0,
      carried_groups: 0,
      tokens_per_s: 0,
      rollout_s: 0,
    },
  };
}

/**
 * The training rollout over the ranks. Sharded (RL2): rank r rolls out its contiguous share of
 * the step's prompts with the seeds one process would give them (prompt i of the stream samples
 * with trainer.seed + (i * G + s) * 1000), and the shards are all-gathered so every rank holds
 * the whole batch. Refill and oversampling (rollout.refill, groups_in_flight, partial_rollout)
 * tie a step's prompts to completion order, so then every rank rolls out the whole step and
 * the ranks' batches are checked equal.
 */
function ranksRollout(
  dp: DataParallel,
  r: PpoConfig['rollout'],
  stream: PromptStream,
  seed: number,
  runner: RolloutRunner | undefined,
  shardRunner: (share: RolloutPrompt[], seed: number) => RolloutRunner,
  tpGen?: TensorParallelGeneration,
): Pick<PpoRollout, 'step'> {
  const whole = (k: number) =>
    tpGen
      ? tpGen.shared(() => (runner as RolloutRunner).step(k))
      : (runner as RolloutRunner).step(k);
  if (dp.size === 1) return { step: whole };
  const shardable =
    !r.refill &&
    !r.partial_rollout &&
    r.groups_in_flight === null &&
    r.train_prompts_per_rollout >= dp.size;
  if (!shardable) {
    return {
      step: async (k) => {
        const res = await whole(k);
        checkSameRollout(dp, res.batch.sequences, k);
        return res;
      },
    };
  }
  // under tp generation a group's lead rolls out the shares of its group's ranks (consecutive), the others none
  const span = tpGen ? tpGen.size : 1;
  return {
    step: async (k) => {
      const before = stream.consumed;
      const prompts = stream.next(r.train_prompts_per_rollout);
      const first = dp.rank - (dp.rank % span);
      const from = Math.floor((first * prompts.length) / dp.size);
      const share = prompts.slice(from, Math.floor(((first + span) * prompts.length) / dp.size));
      if (tpGen && !tpGen.lead)
        return gatherRollout(
          dp,
          await tpGen.led(
            async () => emptyShard(r.responses_per_prompt),
            emptyShard(r.responses_per_prompt),
          ),
          0,
        );
      const shard = shardRunner(share, seed + (before + from) * r.responses_per_prompt * 1000);
      try {
        return gatherRollout(
          dp,
          await (tpGen
            ? tpGen.led(() => shard.step(k), emptyShard(r.responses_per_prompt))
            : shard.step(k)),
          share.length,
        );
      } finally {
        await shard.close();
      }
    },
  };
}

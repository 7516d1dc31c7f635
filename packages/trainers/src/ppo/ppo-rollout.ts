import { join } from 'node:path';
import type { Tokenizer } from '@rl2/data';
import { type DecoderModel, type GenerationConfig, createGenerator } from '@rl2/models';
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
import type { DataParallel } from '../parallel-model/data-parallel.js';
import { checkSameRollout } from './check-same-rollout.js';
import { type RolloutShard, gatherRollout } from './gather-rollout.js';
import type { PpoConfig } from './ppo-config.js';
import { ppoSequenceBudget } from './prompt-budget.js';
import type { PromptStream } from './prompt-stream.js';

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

/** What the rollout is built from besides the config. */
export interface PpoRolloutParts {
  /** The full actor the embedded engine generates with. */
  readonly actor: DecoderModel;
  readonly generationConfig?: GenerationConfig;
  readonly tokenizer: Tokenizer;
  readonly env: Environment;
  readonly stream: PromptStream;
  readonly testPrompts: readonly RolloutPrompt[];
  /** Writes the actor as a HF folder (the SGLang weight sync). */
  readonly saveActor: (dir: string) => Promise<void>;
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
function createPpoEngine(cfg: PpoConfig['rollout'], actor: DecoderModel, generationConfig: GenerationConfig | undefined, tokenizer: Tokenizer): RolloutEngine {
  if (cfg.engine === 'sglang') {
    if (cfg.server_urls.length === 0) {
      throw new TrainersError('INVALID_ARGUMENT', 'rollout.engine=sglang needs rollout.server_urls=[http://host:port] (an SGLang server or `rl2 serve --model PATH`)');
    }
    // servers started with --api-key: the key comes from RL2_API_KEY (kept out of config.yaml)
    const apiKey = process.env.RL2_API_KEY;
    return createSGLangEngine({ urls: cfg.server_urls, ...(apiKey ? { apiKey } : {}) });
  }
  const eos = generationConfig?.eosTokenIds?.length ? generationConfig.eosTokenIds : [tokenizer.eosTokenId];
  const generator = createGenerator(actor, { maxBatch: cfg.max_batch, decode: (ids) => tokenizer.decode(ids), eosTokenIds: eos });
  return createEmbeddedEngine({ generator });
}

/** Fails early, naming every server, when an SGLang engine is not reachable. */
async function checkEngine(engine: RolloutEngine, r: PpoConfig['rollout']): Promise<void> {
  if (r.engine !== 'sglang') return;
  const health = await engine.health();
  if (health.ok) return;
  const down = health.backends.filter((b) => !b.ok).map((b) => `${b.name}: ${b.error ?? 'unhealthy'}`);
  throw new TrainersError('INVALID_ARGUMENT', `rollout.server_urls: no healthy SGLang server (${down.join('; ')}); start one (e.g. rl2 serve --model PATH) or fix the URLs`);
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

const prefixed = (prefix: string, m: object) => Object.fromEntries(Object.entries(m).map(([k, v]) => [`${prefix}/${k}`, v as number]));

/**
 * Starts the engine of rollout.engine (checking SGLang servers are up) and the rollout runner
 * over the prompt stream. Under several ranks see {@link ranksRollout}.
 */
export async function openPpoRollout(config: PpoConfig, dp: DataParallel, parts: PpoRolloutParts): Promise<PpoRollout> {
  const { trainer, rollout: r } = config;
  const { stream, out } = parts;
  const isMain = dp.rank === 0;
  const engine = createPpoEngine(r, parts.actor, parts.generationConfig, parts.tokenizer);
  await checkEngine(engine, r);
  const runnerOptions = {
    engine,
    env: parts.env,
    tokenizer: parts.tokenizer,
    nextPrompts: (n: number) => stream.next(n),
    promptsPerStep: r.train_prompts_per_rollout,
    responsesPerPrompt: r.responses_per_prompt,
    maxTurns: r.max_turns,
    // no trajectory outgrows a micro-batch (prompts were checked against it when loaded)
    maxSequenceTokens: ppoSequenceBudget(config).budget,
    sampling: samplingParams(r.train_sampling_params),
    evalSampling: samplingParams(r.test_sampling_params),
    concurrency: r.concurrency,
    // The runner seeds sample s of its g-th launched group with seed + (g * G + s) * 1000; a resumed
    // run continues the numbering where the checkpoint left it, so it samples what an
    // uninterrupted run would have.
    seed: trainer.seed + stream.consumed * r.responses_per_prompt * 1000,
    dynamicFiltering: r.dynamic_filtering,
    refill: r.refill,
    ...(r.max_groups_per_rollout ? { maxGroupsPerStep: Math.max(r.max_groups_per_rollout, r.train_prompts_per_rollout, r.groups_in_flight ?? 0) } : {}),
    ...(r.groups_in_flight ? { groupsInFlight: r.groups_in_flight } : {}),
    partialRollout: r.partial_rollout,
    onSampleError: r.on_sample_error,
    ...(r.save_rollouts && isMain ? { saveDir: join(trainer.save_dir, 'rollouts') } : {}),
    log: (line: string) => {
      if (isMain) out.write(`${line}\n`);
    },
  };
  const runner: RolloutRunner = createRolloutRunner(runnerOptions);
  const shardRunner = (share: RolloutPrompt[], seed: number) =>
    createRolloutRunner({
      ...runnerOptions,
      nextPrompts: once(share),
      promptsPerStep: Math.max(1, share.length),
      seed,
      ...(r.save_rollouts ? { saveDir: join(trainer.save_dir, 'rollouts', `rank-${dp.rank}`) } : {}),
      log: (line: string) => out.write(`${line}\n`),
    });
  const training = ranksRollout(dp, r, stream, trainer.seed, runner, shardRunner);
  return {
    step: (k) => training.step(k),
    evaluate: async (step) => {
      if (parts.testPrompts.length === 0) return undefined;
      const res = await runner.evaluate(parts.testPrompts, step);
      const { rollout_s: _s, tokens_per_s: _t, groups: _g, carried_groups: _c, filtering_ratio: _f, ...shown } = res.metrics;
      const line = `evaluation @ step ${step}: reward ${shown['reward/mean'].toFixed(4)} (${parts.testPrompts.length} prompts, temperature ${r.test_sampling_params.temperature}), response length ${shown['response_length/mean'].toFixed(1)}`;
      return { values: prefixed('test', shown), line };
    },
    syncWeights: async () => {
      if (r.engine === 'embedded') return engine.flushCache();
      await parts.saveActor(r.weight_sync_dir);
      await engine.updateWeights(r.weight_sync_dir);
    },
    close: () => runner.close(),
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
  runner: RolloutRunner,
  shardRunner: (share: RolloutPrompt[], seed: number) => RolloutRunner,
): Pick<PpoRollout, 'step'> {
  if (dp.size === 1) return runner;
  const shardable = !r.refill && !r.partial_rollout && r.groups_in_flight === null && r.train_prompts_per_rollout >= dp.size;
  if (!shardable) {
    return {
      step: async (k) => {
        const res = await runner.step(k);
        checkSameRollout(dp, res.batch.sequences, k);
        return res;
      },
    };
  }
  return {
    step: async (k) => {
      const before = stream.consumed;
      const prompts = stream.next(r.train_prompts_per_rollout);
      const from = Math.floor((dp.rank * prompts.length) / dp.size);
      const share = prompts.slice(from, Math.floor(((dp.rank + 1) * prompts.length) / dp.size));
      const shard = shardRunner(share, seed + (before + from) * r.responses_per_prompt * 1000);
      try {
        return gatherRollout(dp, await shard.step(k), share.length);
      } finally {
        await shard.close();
      }
    },
  };
}

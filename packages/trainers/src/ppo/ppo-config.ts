import { LOSS_AGGREGATIONS } from '@rl2/algos';
import { z } from 'zod';
import {
  type Inherit,
  applyChatTemplate,
  inheritFromTrain,
  onBadRow,
  promptKey,
  promptMessagesKey,
  testRatio,
} from '../config/data-config.js';
import { modelSection } from '../config/model-section.js';
import { option } from '../config/option.js';
import { parallelOptions } from '../config/parallel-config.js';
import { trainerSection } from '../config/trainer-config.js';
import { TrainersError } from '../errors.js';

/** `data.train` / `data.test` of `rl2 ppo`: {prompt, answer} or {messages, answer} rows. */
function ppoSplit(test: boolean) {
  const inherit = inheritFromTrain(test);
  return z.strictObject({
    path: option(
      test ? z.string().min(1).nullable() : z.string().min(1),
      null,
      test
        ? 'test prompts (.json/.jsonl/.csv/.parquet/.arrow); null: split test_ratio off train'
        : 'training prompts (.json/.jsonl/.csv/.parquet/.arrow) or hub dataset; `split@path` picks a split',
    ),
    prompt_key: promptKey(inherit),
    messages_key: promptMessagesKey(inherit),
    answer_key: option(
      z.string().min(1),
      inherit('answer_key', 'answer'),
      'column passed to the env as `answer`',
    ),
    apply_chat_template: applyChatTemplate(inherit),
  });
}

/** Sampling parameters as SGLang names them (sent unchanged to an SGLang server). */
function samplingSection(test: boolean) {
  const inherit: Inherit = (key, value) =>
    test ? `\${rollout.train_sampling_params.${key}}` : value;
  return z.strictObject({
    temperature: option(
      z.number().nonnegative(),
      test ? 0 : 1,
      test
        ? 'evaluation temperature (0: greedy)'
        : 'sampling temperature of training rollouts (also divides the logits of the logprob passes)',
    ),
    top_p: option(z.number().gt(0).max(1), inherit('top_p', 1), 'nucleus sampling mass'),
    top_k: option(z.number().int(), inherit('top_k', -1), 'top-k cut (-1: none)'),
    max_new_tokens: option(
      z.number().int().positive(),
      inherit('max_new_tokens', 256),
      'tokens generated per turn at most',
    ),
    stop: option(
      z.array(z.string()).nullable(),
      inherit('stop', null),
      'stop strings, e.g. ["</calc>", "</answer>"] for a tool env',
    ),
    no_stop_trim: option(
      z.boolean(),
      inherit('no_stop_trim', true),
      'keep the stop string in the output (the trainer trains on exactly the generated ids)',
    ),
  });
}

/** `actor.avg_level` / `critic.avg_level`: RL2's token / sequence, or any of the four @rl2/algos aggregation modes. */
export const PPO_AVG_LEVELS = ['token', 'sequence', ...LOSS_AGGREGATIONS] as const;

/** Every `adv.estimator` (the @rl2/algos registry names). */
export const PPO_ADV_ESTIMATORS = [
  'reinforce',
  'grpo',
  'dr-grpo',
  'rloo',
  'reinforce++',
  'reinforce++-baseline',
  'gae',
] as const;

const avgLevel = (dflt: string, what: string) =>
  option(
    z.enum(PPO_AVG_LEVELS),
    dflt,
    `${what} aggregation: token (= token-mean, sum over all action tokens / their count; Dr. ` +
      `GRPO, DAPO), sequence (= seq-mean-token-mean, mean of per-sequence means; GRPO), ` +
      `seq-mean-token-sum (per-sequence sums / sequences), seq-mean-token-sum-norm ` +
      `(per-sequence sums / (sequences x norm_length); Dr. GRPO's constant horizon)`,
  );

/**
 * `rl2 ppo`: PPO / GRPO with RL2's config tree. Defaults are RL2's recipe Dr. GRPO:
 * adv.estimator=reinforce (group-mean baseline, no std division), token-mean loss, no KL.
 * OpenAI PPO: kl.type=reward kl.reward_estimator=k1 adv.estimator=gae.
 * DeepSeek GRPO: actor.avg_level=sequence kl.type=loss kl.loss_estimator=k3 adv.norm_var=true.
 */
export const ppoConfigSchema = z.strictObject({
  data: z.strictObject({
    train: ppoSplit(false),
    test: ppoSplit(true),
    test_ratio: testRatio(),
    shuffle: option(z.boolean(), true, 'shuffle the prompt order every epoch (seeded, resumable)'),
    on_bad_row: onBadRow(),
  }),
  rollout: z.strictObject({
    engine: option(
      z.enum(['embedded', 'sglang']),
      'embedded',
      "embedded: generate in-process with the actor's own weights (hybrid engine); sglang: SGLang servers at rollout.server_urls",
    ),
    server_urls: option(
      z.array(z.string().min(1)),
      [],
      'SGLang server or router URLs (rollout.engine=sglang)',
    ),
    weight_sync_dir: option(
      z.string().min(1),
      '${trainer.save_dir}/weights',
      'folder (readable by the servers) where the actor is written for /update_weights_from_disk',
    ),
    env_path: option(
      z.string().min(1),
      null,
      '.ts/.js/.mjs module exporting async step(state, action, answer) -> [next_state, reward, done]',
    ),
    env_timeout_s: option(
      z.number().positive(),
      60,
      'an env step slower than this fails its sample',
    ),
    on_sample_error: option(
      z.enum(['skip', 'stop']),
      'skip',
      "skip: drop the failed sample's group and go on; stop: end the run",
    ),
    max_failed_steps: option(
      z.number().int().nonnegative(),
      0,
      'steps in a row where every sample failed (env or engine errors) that the run goes on after; one more stops it with exit code 1',
    ),
    max_filtered_steps: option(
      z.number().int().nonnegative(),
      10,
      'steps in a row where dynamic filtering dropped every group (nothing to train on) that ' +
        'the run goes on after, each announced; one more stops it with exit code 1',
    ),
    env_workers: option(
      z.number().int().positive(),
      1,
      'worker threads the env runs in (a blocked step() is stopped after env_timeout_s); more for CPU-heavy envs',
    ),
    train_prompts_per_rollout: option(
      z.number().int().positive(),
      16,
      'prompt groups trained on per step',
    ),
    test_prompts_per_rollout: option(
      z.number().int().positive().nullable(),
      null,
      'test prompts per evaluation (null: all)',
    ),
    responses_per_prompt: option(
      z.number().int().positive(),
      8,
      'responses sampled per prompt (the group size)',
    ),
    max_turns: option(
      z.number().int().positive(),
      1,
      'turns per trajectory at most (multi-turn envs)',
    ),
    train_sampling_params: samplingSection(false),
    test_sampling_params: samplingSection(true),
    dynamic_filtering: option(
      z.boolean(),
      true,
      'drop groups whose rewards are all equal (their advantages are 0)',
    ),
    refill: option(
      z.boolean(),
      false,
      'after filtering, sample more prompts until the step has train_prompts_per_rollout groups',
    ),
    max_groups_per_rollout: option(
      z.number().int().positive().nullable(),
      null,
      'cap on groups launched per step with refill (null: 4 x train_prompts_per_rollout)',
    ),
    groups_in_flight: option(
      z.number().int().positive().nullable(),
      null,
      'groups generating at once (oversampling; null: train_prompts_per_rollout); a step ends on the first groups to finish',
    ),
    partial_rollout: option(
      z.boolean(),
      false,
      'pause the unfinished groups at the end of a step and finish them in the next (needs groups_in_flight > train_prompts_per_rollout)',
    ),
    concurrency: option(z.number().int().positive(), 64, 'trajectories in flight at once'),
    max_batch: option(
      z.number().int().positive(),
      64,
      'rows decoded together by the embedded generator',
    ),
    weight_dtype: option(
      z.enum(['auto', 'float32', 'bfloat16', 'float16']),
      'auto',
      "weights' element type while the embedded generator decodes (auto: bfloat16 for a bfloat16 " +
        'checkpoint, else float32); 16-bit halves the bytes a step reads, actor.tis_coef corrects the mismatch',
    ),
    save_rollouts: option(
      z.boolean(),
      true,
      'write save_dir/rollouts/step-N.jsonl and eval-step-N.jsonl',
    ),
  }),
  actor: z.strictObject({
    ...modelSection({ lr: 1e-6 }),
    ...parallelOptions(),
    avg_level: avgLevel('token', 'actor loss'),
    norm_length: option(
      z.number().positive(),
      '${rollout.train_sampling_params.max_new_tokens}',
      'the constant horizon avg_level=seq-mean-token-sum-norm divides per-sequence sums by',
    ),
    temperature: option(
      z.number().positive(),
      '${rollout.train_sampling_params.temperature}',
      'logits are divided by this in the logprob passes (the sampling temperature)',
    ),
    update_per_rollout: option(
      z.number().int().positive(),
      1,
      'optimizer steps per rollout (the batch is split in this many contiguous chunks)',
    ),
    loss: option(
      z.enum(['ppo', 'gspo']),
      'ppo',
      'ppo: per-token ratio exp(logp - old_logp); gspo: sequence-level ratio exp(mean over the ' +
        'sequence of (logp - old_logp)) for every token (GSPO, arxiv 2507.18071; pair with avg_level=sequence)',
    ),
    clip: option(
      z.number().positive().lt(1),
      0.2,
      'PPO ratio clip epsilon (the default of clip_low and clip_high)',
    ),
    clip_low: option(
      z.number().min(0).lt(1),
      '${actor.clip}',
      'lower clip: the ratio is clipped at 1 - clip_low',
    ),
    clip_high: option(
      z.number().min(0),
      '${actor.clip}',
      'upper clip: the ratio is clipped at 1 + clip_high (DAPO clip-higher: 0.28, arxiv 2503.14476)',
    ),
    dual_clip: option(
      z.number().gt(1).nullable(),
      null,
      'dual-clip constant c > 1: for negative advantages the loss is capped at -c * A (e.g. 3, arxiv 1912.09729; null: off)',
    ),
    tis_coef: option(
      z.number().nonnegative(),
      0,
      'truncated importance sampling: the per-token loss is multiplied by min(exp(logp - engine_logp), tis_coef) (e.g. 2; 0: off)',
    ),
    freeze_steps: option(
      z.number().int().nonnegative(),
      0,
      'steps the actor waits while the critic warms up',
    ),
  }),
  ref_actor: z.strictObject({
    model_name: option(
      z.string().min(1),
      '${actor.model_name}',
      'frozen reference policy for the KL terms (loaded only when kl.coef > 0)',
    ),
  }),
  critic: z.strictObject({
    ...modelSection({ lr: 5e-6 }),
    ...parallelOptions(),
    model_name: option(
      z.string().min(1),
      '${actor.model_name}',
      'critic initialisation (a causal LM gets a zero value head); used only with adv.estimator=gae',
    ),
    max_length_per_device: option(
      z.number().int().positive(),
      '${actor.max_length_per_device}',
      'token budget of one packed micro-batch',
    ),
    avg_level: avgLevel('${actor.avg_level}', 'value-loss'),
    norm_length: option(
      z.number().positive(),
      '${actor.norm_length}',
      'the constant horizon of avg_level=seq-mean-token-sum-norm',
    ),
    update_per_rollout: option(
      z.number().int().positive(),
      '${actor.update_per_rollout}',
      'critic optimizer steps per rollout',
    ),
    clip: option(z.number().nonnegative(), 0.5, 'value clip around the rollout-time values'),
  }),
  kl: z.strictObject({
    coef: option(
      z.number().nonnegative(),
      0,
      'KL penalty coefficient against ref_actor (0: no reference pass); the starting value when kl.target is set',
    ),
    type: option(
      z.enum(['reward', 'advantage', 'loss']).nullable(),
      null,
      'where the KL goes: reward (coef * KL subtracted from the token rewards before the ' +
        'estimator; OpenAI PPO), advantage (subtracted from the advantages after it), loss ' +
        '(added to the actor loss; DeepSeek GRPO); null: logged only',
    ),
    reward_estimator: option(
      z.enum(['k1', 'k2', 'k3']),
      'k1',
      'KL estimator for kl.type=reward / advantage, on lr = old_logp - ref_logp: k1 = lr, k2 = ' +
        'lr^2 / 2, k3 = exp(-lr) - 1 + lr (http://joschu.net/blog/kl-approx.html)',
    ),
    loss_estimator: option(
      z.enum(['k1', 'k2', 'k3']),
      'k2',
      'KL estimator for kl.type=loss, on lr = logp - ref_logp',
    ),
    target: option(
      z.number().positive().nullable(),
      null,
      'adaptive KL (arxiv 1909.08593): after each step kl.coef *= 1 + clip(KL / target - 1, ' +
        '-0.2, 0.2) * sequences / horizon, KL = mean over sequences of the summed k1 KL(old || ' +
        'ref); null: fixed kl.coef',
    ),
    horizon: option(z.number().positive(), 10000, 'adaptive KL horizon in sequences (kl.target)'),
  }),
  entropy: z.strictObject({
    coef: option(z.number(), 0, 'entropy bonus coefficient (subtracted from the actor loss)'),
  }),
  adv: z.strictObject({
    estimator: option(
      // dr_grpo: the underscore spelling (as in the Dr. GRPO literature) is accepted for dr-grpo
      z.preprocess((v) => (v === 'dr_grpo' ? 'dr-grpo' : v), z.enum(PPO_ADV_ESTIMATORS)),
      'reinforce',
      'advantage estimator (@rl2/algos): reinforce (R - group mean; / std with norm_var), grpo ' +
        '(reinforce with norm_var), dr-grpo (reinforce without; dr_grpo also accepted), rloo ' +
        '(leave-one-out baseline), reinforce++ (return-to-go whitened over the batch), ' +
        'reinforce++-baseline (minus the group mean, then whitened), gae (trains a critic)',
    ),
    gamma: option(z.number().min(0).max(1), 1, 'discount (gae, reinforce++)'),
    lamda: option(z.number().min(0).max(1), 1, 'GAE lambda (RL2 spelling)'),
    norm_var: option(
      z.boolean(),
      false,
      'reinforce: divide by the group std (GRPO; grpo sets it, dr-grpo clears it)',
    ),
    global_norm: option(
      z.boolean(),
      false,
      'reinforce / grpo / dr-grpo: baseline (and std) over the whole batch instead of the group',
    ),
  }),
  // RL2's ppo.py evaluates every test_freq steps only (no epoch validation)
  trainer: trainerSection('ppo', {
    val_before_train:
      'with trainer.test_freq set, evaluate on the test prompts once before the first step (a fresh run only)',
    test_freq:
      'evaluate on the test prompts every N steps and after the last (null: never, as RL2; no evaluation per epoch)',
  }),
});

export type PpoConfig = z.infer<typeof ppoConfigSchema>;

/**
 * Checks across keys that the schema cannot express one key at a time; throws
 * CONFIG_INVALID_VALUE naming the keys and what to set.
 */
export function checkPpoConfig(config: PpoConfig): void {
  const { kl } = config;
  const fail = (message: string) => {
    throw new TrainersError('CONFIG_INVALID_VALUE', message);
  };
  if (kl.target !== null && kl.coef === 0) {
    fail(
      `kl.target=${kl.target} (adaptive KL) adapts kl.coef from its starting value, but ` +
        `kl.coef=0; set kl.coef > 0 (e.g. 0.05) or kl.target=null`,
    );
  }
  for (const key of ['actor', 'critic'] as const)
    if (config[key].lora.base_dtype === 'bfloat16')
      fail(
        `${key}.lora.base_dtype=bfloat16: rl2 ppo keeps the LoRA base in float32 for now (its generator ` +
          `reads float32 weights); set ${key}.lora.base_dtype=auto or float32`,
      );
  if (kl.target !== null && kl.type === null) {
    fail(
      `kl.target=${kl.target} (adaptive KL) needs the KL applied somewhere; set kl.type to one of reward, advantage, loss`,
    );
  }
}

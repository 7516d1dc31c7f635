import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeCharTokenizer } from '@rl2/data';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { writeRandomCheckpoint } from '../../src/model-init/random-checkpoint.js';

/** Overrides that keep a test run quiet and small: no progress bar, one thread, no TensorBoard or report. */
export const QUIET_TRAINER = [
  'trainer.progress=none',
  'trainer.threads=1',
  'trainer.use_tensorboard=false',
  'trainer.report=false',
];

/**
 * Test fixtures of the PPO trainer: a 31-id character tokenizer (no chat template), a tiny
 * random Qwen3 checkpoint over it, prompt files and env modules, all in a fresh temp folder.
 */
export function tinyRun(
  name: string,
  opts: {
    hiddenSize?: number;
    seed?: number;
    heads?: number;
    kvHeads?: number;
    vocabSize?: number;
  } = {},
) {
  const dir = tempDir(`rl2-ppo-${name}-`);
  const tokDir = join(dir, 'tokenizer');
  writeCharTokenizer(tokDir, [...'0123456789abcdefghijklmn+=< >/']);
  const model = join(dir, 'model');
  writeRandomCheckpoint({
    arch: 'qwen3',
    tokenizerDir: tokDir,
    outDir: model,
    hiddenSize: opts.hiddenSize ?? 16,
    numLayers: 1,
    numHeads: opts.heads ?? 2,
    numKvHeads: opts.kvHeads ?? 1,
    ...(opts.vocabSize ? { vocabSize: opts.vocabSize } : {}),
    seed: opts.seed ?? 0,
  });
  const rows = (words: string[]) =>
    `${words.map((w) => JSON.stringify({ prompt: w, answer: 7 })).join('\n')}\n`;
  const train = join(dir, 'train.jsonl');
  const test = join(dir, 'test.jsonl');
  writeFileSync(train, rows(['ab', 'cd', 'ef', 'gh', 'ij', 'kl', 'mn', 'ba']));
  writeFileSync(test, rows(['dc', 'fe', 'hg', 'ji']));
  /** Reward = share of generated characters that are digits: a trivially learnable env. */
  const digitsEnv = join(dir, 'digits-env.mjs');
  writeFileSync(
    digitsEnv,
    `export async function step(state, action, answer) {
  const chars = [...action.replace('<|im_end|>', '')];
  const digits = chars.filter((c) => c >= '0' && c <= '9').length;
  return [null, chars.length ? digits / chars.length : 0, true];
}
`,
  );
  /**
   * Two turns in one sequence: turn 1 gets a tool result appended to state + action (RL2's
   * prefix merge, env tokens masked), turn 2 earns the share of digits it generates.
   */
  const toolEnv = join(dir, 'tool-env.mjs');
  writeFileSync(
    toolEnv,
    `export async function step(state, action, answer) {
  if (!state.includes('<fig>')) return [state + action + '<fig>' + answer + '</fig>', 0, false];
  const chars = [...action.replace('<|im_end|>', '')];
  const digits = chars.filter((c) => c >= '0' && c <= '9').length;
  return [null, chars.length ? digits / chars.length : 0, true];
}
`,
  );
  /** The config keys pointing a run at this case: model, train/test prompts, and `env` (default the digits env). */
  const overrides = (env: string = digitsEnv) => [
    `actor.model_name=${model}`,
    `data.train.path=${train}`,
    `data.test.path=${test}`,
    `rollout.env_path=${env}`,
  ];
  return { dir, model, tokenizer: tokDir, train, test, digitsEnv, toolEnv, overrides };
}

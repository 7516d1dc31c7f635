import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { main } from '../src/program.js';

export const EXAMPLE_TOKENIZER = resolve(
  import.meta.dirname,
  '../../../examples/addition/tokenizer',
);

/** A writable that records text and can react to it (e.g. press Ctrl-C at a step). */
export function sink(onText?: (text: string) => void) {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      onText?.(String(chunk));
      cb();
    },
  }) as unknown as NodeJS.WriteStream;
  return { stream, text: () => chunks.join('') };
}

/** Runs `rl2 ...argv` in-process; returns the exit code and what it printed. */
export async function rl2(
  argv: string[],
  opts: { signal?: AbortSignal; onStdout?: (text: string) => void } = {},
) {
  const out = sink(opts.onStdout);
  const err = sink();
  const code = await main(argv, { stdout: out.stream, stderr: err.stream, signal: opts.signal });
  return { code, stdout: out.text(), stderr: err.text() };
}

/** Overrides for a quiet, small test run: progress as lines, one thread, no report or TensorBoard files. */
export const QUIET_RUN = [
  'trainer.progress=lines',
  'trainer.threads=1',
  'trainer.report=false',
  'trainer.use_tensorboard=false',
];

export const tmp = (name: string) => tempDir(`rl2-cli-${name}-`);

/** Tiny addition data in chat format: SFT rows and preference pairs. */
export function writeTinyData(dir: string) {
  const pairs: [number, number][] = [
    [12, 7],
    [3, 45],
    [60, 21],
    [8, 8],
    [33, 14],
    [5, 90],
    [71, 2],
    [40, 40],
    [9, 16],
    [27, 30],
  ];
  const sft = pairs.map(([a, b]) => ({
    messages: [
      { role: 'user', content: `${a}+${b}=` },
      { role: 'assistant', content: String(a + b) },
    ],
  }));
  const pref = pairs.map(([a, b]) => ({
    messages: [{ role: 'user', content: `${a}+${b}=` }],
    chosen: String(a + b),
    rejected: String(a),
  }));
  const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
  const files = {
    sftTrain: join(dir, 'sft-train.jsonl'),
    sftTest: join(dir, 'sft-test.jsonl'),
    pairTrain: join(dir, 'pairs-train.jsonl'),
    pairTest: join(dir, 'pairs-test.jsonl'),
  };
  writeFileSync(files.sftTrain, jsonl(sft.slice(0, 8)));
  writeFileSync(files.sftTest, jsonl(sft.slice(8)));
  writeFileSync(files.pairTrain, jsonl(pref.slice(0, 8)));
  writeFileSync(files.pairTest, jsonl(pref.slice(8)));
  return files;
}

/** Every record of RUN_DIR/metrics.jsonl, in order (NaN and Infinity are logged as null). */
export function metricRecords(runDir: string): Record<string, number>[] {
  return readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number>);
}

/** train/loss by step from RUN_DIR/metrics.jsonl. */
export function trainLosses(runDir: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of metricRecords(runDir))
    if (r['train/loss'] !== undefined) out.set(r.step, r['train/loss']);
  return out;
}

/**
 * A folder for tiny `rl2 ppo` runs: the tiny model, train and test rows of the given arithmetic
 * prompts, `env(name, source)` to write an environment file and `args(saveDir, envFile, epochs,
 * extra)` for `rl2 ppo` (2 prompts a step, 2 responses each, 4 new tokens).
 */
export async function tinyPpoRun(name: string, prompts: string[]) {
  const dir = tmp(name);
  const model = join(dir, 'model');
  await initTinyModel(model);
  const rows = prompts.map((q) =>
    JSON.stringify({ messages: [{ role: 'user', content: q }], answer: 0 }),
  );
  for (const split of ['train', 'test'])
    writeFileSync(join(dir, `${split}.jsonl`), `${rows.join('\n')}\n`);
  const env = (file: string, source: string) => {
    writeFileSync(join(dir, file), source);
    return join(dir, file);
  };
  const args = (saveDir: string, envFile: string, epochs: number, extra: string[] = []) => [
    'ppo',
    `actor.model_name=${model}`,
    `data.train.path=${join(dir, 'train.jsonl')}`,
    `data.test.path=${join(dir, 'test.jsonl')}`,
    `rollout.env_path=${envFile}`,
    'rollout.train_prompts_per_rollout=2',
    'rollout.responses_per_prompt=2',
    'rollout.train_sampling_params.max_new_tokens=4',
    `trainer.n_epochs=${epochs}`,
    `trainer.save_dir=${saveDir}`,
    ...QUIET_RUN,
    ...extra,
  ];
  return { dir, model, env, args };
}

/**
 * `rl2 init-model` of the tiny Qwen3 the e2e tests train: 1 layer, 2 heads, hidden 16 unless
 * `hidden` says otherwise; `extra` are further init-model flags.
 */
export async function initTinyModel(out: string, hidden = 16, extra: string[] = []): Promise<void> {
  const shape = ['--hidden-size', String(hidden), '--layers', '1', '--heads', '2'];
  const r = await rl2([
    'init-model',
    '--tokenizer',
    EXAMPLE_TOKENIZER,
    '--out',
    out,
    ...shape,
    ...extra,
  ]);
  if (r.code !== 0) throw new Error(`rl2 init-model failed (${r.code}): ${r.stderr}`);
}

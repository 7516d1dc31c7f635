import { existsSync, readFileSync } from 'node:fs';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { main } from '@rl2/cli';

export const recipes = resolve(import.meta.dirname, '..');
export const root = resolve(recipes, '../..');
export const addTokenizer = join(root, 'examples/addition/tokenizer');

export const tmp = (name: string) => tempDir(`rl2-recipes-${name}-`);

function sink() {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  }) as unknown as NodeJS.WriteStream;
  return { stream, text: () => chunks.join('') };
}

/** `rl2 ...argv` in-process: exit code, stdout, stderr. */
export async function rl2(argv: string[]) {
  const out = sink();
  const err = sink();
  const code = await main(argv, { stdout: out.stream, stderr: err.stream });
  return { code, stdout: out.text(), stderr: err.text() };
}

/** A random 1-layer, 16-wide Qwen3 over the addition example's ASCII tokenizer (ChatML template). */
export async function tinyModel(dir: string): Promise<string> {
  const out = join(dir, 'model');
  const r = await rl2([
    'init-model',
    '--arch',
    'qwen3',
    '--tokenizer',
    addTokenizer,
    '--out',
    out,
    '--hidden-size',
    '16',
    '--layers',
    '1',
    '--heads',
    '2',
  ]);
  if (r.code !== 0) throw new Error(`rl2 init-model failed (${r.code}): ${r.stderr}`);
  return out;
}

/** Quiet, single-threaded, no report or TensorBoard: what every recipe test run adds. */
export const QUIET = [
  'trainer.progress=lines',
  'trainer.threads=1',
  'trainer.report=false',
  'trainer.use_tensorboard=false',
];

/** The records of save_dir/metrics.jsonl. */
export function metrics(saveDir: string): Record<string, number>[] {
  const file = join(saveDir, 'metrics.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number>);
}

/** The rows of save_dir/rollouts/step-N.jsonl. */
export function rollouts(saveDir: string, step: number): Record<string, unknown>[] {
  const file = join(saveDir, 'rollouts', `step-${step}.jsonl`);
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

// A tiny SFT run shared by the data-parallel tests and bench: a random 1-layer Qwen3 on the char
// tokenizer, addition rows of varied length, cpu backend on one thread.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../src/config/load-config.js';
import { type SftConfig, sftConfigSchema } from '../src/config/sft-config.js';
import { writeRandomCheckpoint } from '../src/model-init/random-checkpoint.js';

export const CHAR_TOKENIZER = resolve(import.meta.dirname, 'fixtures/char-tokenizer');

/** Writes model/ and train.jsonl under `dir`. */
export function writeSftCase(dir: string, opts: { rows?: number; hiddenSize?: number; layers?: number } = {}): void {
  mkdirSync(dir, { recursive: true });
  writeRandomCheckpoint({ arch: 'qwen3', tokenizerDir: CHAR_TOKENIZER, outDir: join(dir, 'model'), hiddenSize: opts.hiddenSize ?? 16, numLayers: opts.layers ?? 1, numHeads: 2, seed: 5 });
  const rows = Array.from({ length: opts.rows ?? 16 }, (_, i) => {
    const a = (i * 7919) % 10 ** (1 + (i % 4));
    const b = (i * 104729) % 10 ** (1 + ((i * 3) % 5));
    return { prompt: `${a}+${b}=`, response: String(a + b) };
  });
  writeFileSync(join(dir, 'train.jsonl'), `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
}

/** The run's config; `overrides` last. No validation, report or TensorBoard, so a step is all it does. */
export function sftCaseConfig(dir: string, saveDir: string, overrides: string[] = []): SftConfig {
  return loadConfig(sftConfigSchema, {
    overrides: [
      `actor.model_name=${join(dir, 'model')}`,
      `data.train.path=${join(dir, 'train.jsonl')}`,
      'data.train.apply_chat_template=false',
      'data.train.batch_size=8',
      'data.test_ratio=0',
      'actor.max_length_per_device=24',
      'actor.lr=0.01',
      'actor.warmup_ratio=0',
      'actor.weight_decay=0.1',
      'actor.max_grad_norm=0.5',
      'actor.gradient_checkpointing=false',
      'trainer.max_steps=2',
      'trainer.val_before_train=false',
      'trainer.backend=cpu',
      'trainer.threads=1',
      'trainer.progress=none',
      'trainer.use_tensorboard=false',
      'trainer.report=false',
      `trainer.save_dir=${saveDir}`,
      ...overrides,
    ],
  });
}

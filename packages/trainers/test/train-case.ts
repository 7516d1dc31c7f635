// A tiny SFT or DPO run shared by the data-parallel tests and bench: a random 1-layer Qwen3 on the
// char tokenizer, addition rows of varied length (pairs: right vs wrong sum), cpu backend.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../src/config/load-config.js';
import { type DpoConfig, dpoConfigSchema } from '../src/config/dpo-config.js';
import { type SftConfig, sftConfigSchema } from '../src/config/sft-config.js';
import { writeRandomCheckpoint } from '../src/model-init/random-checkpoint.js';

export const CHAR_TOKENIZER = resolve(import.meta.dirname, 'fixtures/char-tokenizer');

/** The model of a train case: a 1-layer, 2-head Qwen3 of hidden size 16 unless told. */
export interface CaseModel {
  arch?: 'llama' | 'qwen2' | 'qwen3';
  hiddenSize?: number;
  layers?: number;
  heads?: number;
  kvHeads?: number;
  vocabSize?: number;
}

/** Writes model/, train.jsonl and pairs.jsonl under `dir`. */
export function writeTrainCase(dir: string, opts: { rows?: number } & CaseModel = {}): void {
  mkdirSync(dir, { recursive: true });
  writeRandomCheckpoint({
    arch: opts.arch ?? 'qwen3',
    tokenizerDir: CHAR_TOKENIZER,
    outDir: join(dir, 'model'),
    hiddenSize: opts.hiddenSize ?? 16,
    numLayers: opts.layers ?? 1,
    numHeads: opts.heads ?? 2,
    ...(opts.kvHeads ? { numKvHeads: opts.kvHeads } : {}),
    ...(opts.vocabSize ? { vocabSize: opts.vocabSize } : {}),
    tieWordEmbeddings: (opts.arch ?? 'qwen3') !== 'llama',
    seed: 5,
  });
  const rows = Array.from({ length: opts.rows ?? 16 }, (_, i) => {
    const a = (i * 7919) % 10 ** (1 + (i % 4));
    const b = (i * 104729) % 10 ** (1 + ((i * 3) % 5));
    return { prompt: `${a}+${b}=`, response: String(a + b) };
  });
  const jsonl = (rs: unknown[]) => `${rs.map((r) => JSON.stringify(r)).join('\n')}\n`;
  writeFileSync(join(dir, 'train.jsonl'), jsonl(rows));
  writeFileSync(
    join(dir, 'pairs.jsonl'),
    jsonl(
      rows.map((r, i) => ({
        prompt: r.prompt,
        chosen: r.response,
        rejected: String(Number(r.response) + 1 + i),
      })),
    ),
  );
}

export type CaseKind = 'sft' | 'dpo';

/** The run's config; `overrides` last. No validation, report or TensorBoard, so a step is all it does. */
export function caseConfig(
  kind: 'sft',
  dir: string,
  saveDir: string,
  overrides?: string[],
): SftConfig;
export function caseConfig(
  kind: 'dpo',
  dir: string,
  saveDir: string,
  overrides?: string[],
): DpoConfig;
export function caseConfig(
  kind: CaseKind,
  dir: string,
  saveDir: string,
  overrides?: string[],
): SftConfig | DpoConfig;
export function caseConfig(
  kind: CaseKind,
  dir: string,
  saveDir: string,
  overrides: string[] = [],
): SftConfig | DpoConfig {
  return loadConfig(kind === 'sft' ? sftConfigSchema : dpoConfigSchema, {
    overrides: [
      `actor.model_name=${join(dir, 'model')}`,
      `data.train.path=${join(dir, kind === 'sft' ? 'train.jsonl' : 'pairs.jsonl')}`,
      'data.train.apply_chat_template=false',
      'data.train.batch_size=8',
      'data.test_ratio=0',
      `actor.max_length_per_device=${kind === 'sft' ? 24 : 40}`,
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

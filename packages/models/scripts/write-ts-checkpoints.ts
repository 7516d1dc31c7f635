// Writes checkpoints with this package's writer into fixtures/ts-written/ so that
// `python3 scripts/make_fixtures.py --verify-ts` can parse them with an independent reader and
// run the PyTorch reference on them (result: fixtures/ts-written/python-verified.json).
// Run: npx tsx packages/models/scripts/write-ts-checkpoints.ts
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { loadModel } from '../src/checkpoint/load-checkpoint.js';
import { saveModel } from '../src/checkpoint/save-model.js';
import { parseGenerationConfig } from '../src/config/generation-config.js';

/** [source fixture, output folder, options] of every checkpoint written. */
export const TS_WRITTEN = [
  ['llama', 'llama@fp32-sharded', { maxShardSize: 40_000 }],
  // 6 KB: the bf16 embeddings and lm_head (8 KB each) get shards of their own
  ['llama', 'llama@bf16-sharded', { dtype: 'bfloat16', maxShardSize: '6KB' }],
  ['qwen3', 'qwen3@bf16', { dtype: 'bfloat16' }],
  ['qwen3', 'qwen3@fp16', { dtype: 'float16' }],
  ['qwen2-critic', 'qwen2-critic@fp32', {}],
] as const;

export async function writeTsCheckpoints(fixtures: string, out: string): Promise<void> {
  await tf.setBackend('cpu');
  const generationConfig = parseGenerationConfig({
    bos_token_id: 1,
    eos_token_id: [2],
    do_sample: true,
    temperature: 0.7,
    top_p: 0.9,
  });
  for (const [src, folder, options] of TS_WRITTEN) {
    const { model } = await loadModel(join(fixtures, src));
    await saveModel(join(out, folder), model, { ...options, generationConfig });
    for (const v of model.params.values()) v.dispose();
  }
}

if (process.argv[1]?.endsWith('write-ts-checkpoints.ts')) {
  const fixtures = join(import.meta.dirname, '..', 'fixtures');
  await writeTsCheckpoints(fixtures, join(fixtures, 'ts-written'));
  console.log('written to', join(fixtures, 'ts-written'));
}

// The real-size parity case (fixtures/qwen3-0.6b-bf16): a Qwen3-0.6B-shaped checkpoint made by
// `initModelCheckpoint` (what `rl2 init-model` runs), seeded, in bf16 shards. Its 1.2 GB of
// weights are not to be committed: a test regenerates them bit for bit and checks their sha256
// against the fixture (reference.json's sha256). To (re)make the fixture:
//   npx tsx packages/models/scripts/real-size-checkpoint.ts /tmp/q06b
//   /usr/bin/python3 packages/models/scripts/make_fixtures.py --real-size /tmp/q06b
import { createHash } from 'node:crypto';
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { initModelCheckpoint, type ModelSpec } from '../src/model/init-random-model.js';
import { disposeParams } from '../src/model/param-map.js';

/** Qwen/Qwen3-0.6B's config.json sizes (tied embeddings, q/k norm, rope_theta 1e6). */
export const QWEN3_0_6B: ModelSpec = {
  family: 'qwen3',
  vocabSize: 151936,
  hiddenSize: 1024,
  intermediateSize: 3072,
  numLayers: 28,
  numHeads: 16,
  numKvHeads: 8,
  headDim: 128,
  tieWordEmbeddings: true,
  ropeTheta: 1e6,
  rmsNormEps: 1e-6,
  maxPositionEmbeddings: 40960,
  bosTokenId: 151643,
  eosTokenId: 151645,
};

export const REAL_SIZE_SEED = 6;
/** 1.19 GB of bf16 weights in 4 shards (the embeddings, 311 MB, share the first one). */
export const REAL_SIZE_MAX_SHARD = '400MB';

/** Writes the checkpoint into `dir` (bf16 shards + index); frees the model's float32 copy. */
export async function writeRealSizeCheckpoint(dir: string): Promise<string[]> {
  const { model, files } = await initModelCheckpoint(dir, QWEN3_0_6B, {
    seed: REAL_SIZE_SEED,
    dtype: 'bfloat16',
    maxShardSize: REAL_SIZE_MAX_SHARD,
  });
  disposeParams(model.params);
  return files;
}

/** sha256 of every weight file and the index of `dir` (streamed in 16 MB reads). */
export function weightHashes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const buf = Buffer.allocUnsafe(1 << 24);
  for (const file of readdirSync(dir)
    .filter((f) => f.startsWith('model'))
    .sort()) {
    const h = createHash('sha256');
    const fd = openSync(join(dir, file), 'r');
    try {
      for (let n = readSync(fd, buf); n > 0; n = readSync(fd, buf)) h.update(buf.subarray(0, n));
    } finally {
      closeSync(fd);
    }
    out[file] = h.digest('hex');
  }
  return out;
}

if (process.argv[1]?.endsWith('real-size-checkpoint.ts')) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: real-size-checkpoint.ts OUT_DIR');
  await tf.setBackend('cpu');
  const t0 = performance.now();
  const files = await writeRealSizeCheckpoint(dir);
  console.log(
    `${files.length} files in ${((performance.now() - t0) / 1000).toFixed(1)} s:`,
    weightHashes(dir),
  );
}

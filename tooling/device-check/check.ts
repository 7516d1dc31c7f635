// The GPU device check, rl2's side (bundled by pack.mjs into one file with the Node binary and
// dawn.node; run by run.sh on a machine with a Vulkan GPU and no Node): the adapter, a 4096^3
// f32 matmul, SFT tokens/s and peak GPU memory at the Qwen3-0.6B shape, decode tokens/s at batch
// 1, 8 and 64. Prints one `RL2 {json}` line that run.sh tabulates next to torch_check.py's.
// `--shape tiny` runs the same on a small model (to try the bundle on any machine).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '@rl2/engine';
import { createGenerator, loadModel } from '@rl2/models';
import { loadConfig, runSft, sftConfigSchema, writeRandomCheckpoint } from '@rl2/trainers';
import * as tf from '@tensorflow/tfjs-core';

const tiny = process.argv.includes('--shape') && process.argv.at(-1) === 'tiny';
const SHAPE = tiny
  ? { hidden: 64, layers: 2, heads: 4, kv: 2, mlp: 128, vocab: 1000, seq: 64, n: 256 }
  : { hidden: 1024, layers: 28, heads: 16, kv: 8, mlp: 3072, vocab: 151936, seq: 512, n: 4096 };
const dir = mkdtempSync(join(tmpdir(), 'rl2-device-check-'));
const tokenizerDir = join(import.meta.dirname, 'char-tokenizer');
const gpuBytes = () => (tf.memory() as { numBytesInGPU?: number }).numBytesInGPU ?? 0;

async function matmulTflops(n: number): Promise<number> {
  const [a, b] = [tf.randomNormal([n, n]), tf.randomNormal([n, n])];
  const sync = async (t: tf.Tensor) => {
    await tf.slice(t, [0, 0], [1, 1]).data();
    t.dispose();
  };
  await sync(tf.matMul(a, b));
  const reps = 10;
  const began = performance.now();
  const outs = Array.from({ length: reps }, () => tf.matMul(a, b));
  for (const c of outs) await sync(c);
  const s = (performance.now() - began) / 1000;
  tf.dispose([a, b]);
  return (2 * n ** 3 * reps) / s / 1e12;
}

function writeModelAndData(): string {
  writeRandomCheckpoint({
    arch: 'qwen3',
    tokenizerDir,
    outDir: join(dir, 'model'),
    hiddenSize: SHAPE.hidden,
    numLayers: SHAPE.layers,
    numHeads: SHAPE.heads,
    numKvHeads: SHAPE.kv,
    intermediateSize: SHAPE.mlp,
    headDim: SHAPE.hidden / SHAPE.heads,
    vocabSize: SHAPE.vocab,
    tieWordEmbeddings: true,
    seed: 1,
  });
  const chars = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const row = (i: number) => {
    let s = '';
    for (let j = 0; j < SHAPE.seq; j++) s += chars[(i * 7 + j * 13) % chars.length];
    return { prompt: s.slice(0, SHAPE.seq / 4), response: s.slice(SHAPE.seq / 4) };
  };
  const rows = Array.from({ length: 8 * 6 }, (_, i) => JSON.stringify(row(i)));
  writeFileSync(join(dir, 'train.jsonl'), `${rows.join('\n')}\n`);
  return join(dir, 'model');
}

async function sft(model: string) {
  const config = loadConfig(sftConfigSchema, {
    overrides: [
      `actor.model_name=${model}`,
      `data.train.path=${join(dir, 'train.jsonl')}`,
      'data.train.apply_chat_template=false',
      'data.train.batch_size=8',
      'data.test_ratio=0',
      `actor.max_length_per_device=${8 * SHAPE.seq + 64}`,
      'actor.gradient_checkpointing=true',
      'trainer.max_steps=5',
      'trainer.backend=webgpu',
      'trainer.progress=none',
      'trainer.use_tensorboard=false',
      'trainer.report=false',
      `trainer.save_dir=${join(dir, 'sft')}`,
      'trainer.save_freq=1000',
    ],
  });
  const rates: number[] = [];
  let peak = 0;
  await runSft(config, {
    stdout: { write: () => true } as unknown as NodeJS.WriteStream,
    onStep: (r) => {
      rates.push(Number(r['train/tokens_per_s']));
      peak = Math.max(peak, gpuBytes());
    },
  });
  const timed = rates.slice(1).sort((x, y) => x - y);
  return { tokensPerS: timed[Math.floor(timed.length / 2)] ?? Number.NaN, peakGpuBytes: peak };
}

/** Bytes of each download from the GPU while `fn` runs (webgpu's getBufferData). */
async function countingReads<T>(fn: () => Promise<T>): Promise<{ value: T; bytes: number[] }> {
  const backend = tf.backend() as unknown as { getBufferData(b: unknown): Promise<ArrayBuffer> };
  const original = backend.getBufferData.bind(backend);
  const bytes: number[] = [];
  backend.getBufferData = async (b) => {
    const data = await original(b);
    bytes.push(data.byteLength);
    return data;
  };
  try {
    return { value: await fn(), bytes };
  } finally {
    backend.getBufferData = original;
  }
}

/**
 * Greedy decode through createGenerator (on webgpu: the device KV cache and sampling), `batch`
 * prompts of 32 tokens prefilled together, then 64 decode steps timed from the prefill's last
 * token (as torch_check.py times its 64 KV-cache steps); a warm-up at the same batch first.
 */
async function decode(modelDir: string, batch: number) {
  const { model } = await loadModel(modelDir);
  const gen = createGenerator(model, { maxBatch: batch });
  let tokens = 0;
  let firstAt = 0;
  const ask = (i: number, maxNewTokens: number) => ({
    inputIds: Array.from({ length: 32 }, (_, j) => 3 + ((i * 31 + j) % 30)),
    temperature: 0,
    maxNewTokens,
    ignoreEos: true,
    onToken: () => {
      tokens += 1;
      if (tokens === batch) firstAt = performance.now(); // every row has its prefill token
    },
  });
  const rows = (n: number) =>
    Promise.all(Array.from({ length: batch }, (_, i) => gen.generate(ask(i, n))));
  await rows(4);
  tokens = 0;
  const stepsBefore = gen.stats().steps;
  const { bytes } = await countingReads(() => rows(65));
  const s = (performance.now() - firstAt) / 1000;
  const steps = gen.stats().steps - stepsBefore;
  tf.dispose([...model.params.values()]);
  return {
    tokensPerS: (tokens - batch) / s,
    // one read per prefill and per step, of the sampled ids (8 bytes a row), never logits
    readsPerForward: bytes.length / (steps + 1),
    readBytesPerRow: Math.max(...bytes) / batch,
  };
}

let engine = '';
const info = await initEngine({ backend: 'webgpu', logger: (l) => (engine = l) });
const result: Record<string, unknown> = { engine, shape: tiny ? 'tiny' : 'qwen3-0.6b' };
result.matmulF32Tflops = await matmulTflops(SHAPE.n);
result.shaderF16 = info.adapter?.shaderF16 ?? false;
const model = writeModelAndData();
Object.assign(result, await sft(model));
for (const b of [1, 8, 64]) {
  const d = await decode(model, b);
  result[`decodeBatch${b}`] = d.tokensPerS;
  result[`decodeBatch${b}Reads`] = d;
}
console.log(`RL2 ${JSON.stringify(result)}`);
rmSync(dir, { recursive: true, force: true });
process.exit(0);

// pnpm bench webgpu [steps]: the GPU path end to end, next to the native CPU backend in the same
// process: a 512^3 matmul, tiny-model SFT (random Qwen3, hidden 64, 2 layers, addition rows) and
// greedy KV-cache decode at batch 1 and 8, on `native` and then on `webgpu` (whatever adapter Dawn
// finds: a real GPU, or Mesa's lavapipe on a machine without one, where speed is not the point:
// the table shows the path runs and what it costs). Losses must agree between the two.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '@rl2/engine';
import { createGenerator, loadModel } from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { runSft } from '../src/sft/run-sft.js';
import { caseConfig, writeTrainCase } from '../test/train-case.js';

const STEPS = Number(process.argv[2] ?? 6);
const dir = mkdtempSync(join(tmpdir(), 'rl2-bench-webgpu-'));
writeTrainCase(dir, { rows: 8 * (STEPS + 1), hiddenSize: 64, layers: 2, heads: 4 });
const quiet = { write: () => true } as unknown as NodeJS.WriteStream;

interface Row {
  engine: string;
  matmulGflops: number;
  sftTokensPerS: number;
  losses: number[];
  decode: Record<number, number>;
}

async function matmulGflops(n: number): Promise<number> {
  const [a, b] = [tf.randomNormal([n, n]), tf.randomNormal([n, n])];
  await tf.matMul(a, b).data(); // compile / warm up
  const reps = 5;
  const began = performance.now();
  for (let i = 0; i < reps; i++) {
    const c = tf.matMul(a, b);
    await c.data();
    c.dispose();
  }
  const s = (performance.now() - began) / 1000;
  tf.dispose([a, b]);
  return (2 * n ** 3 * reps) / s / 1e9;
}

async function sft(backend: string): Promise<{ tokensPerS: number; losses: number[] }> {
  const saveDir = join(dir, `sft-${backend}`);
  const overrides = [`trainer.backend=${backend}`, `trainer.max_steps=${STEPS}`];
  const rates: number[] = [];
  const res = await runSft(caseConfig('sft', dir, saveDir, overrides), {
    stdout: quiet,
    onStep: (r) => {
      rates.push(Number(r['train/tokens_per_s']));
    },
  });
  const timed = rates.slice(1).sort((a, b) => a - b); // step 1 compiles the shaders
  return { tokensPerS: timed[Math.floor(timed.length / 2)]!, losses: [...res.trainLoss.values()] };
}

async function decode(batch: number): Promise<number> {
  const { model } = await loadModel(join(dir, 'model'));
  const gen = createGenerator(model, { maxBatch: batch });
  const request = (i: number) => ({
    inputIds: [1, 5 + i, 9, 12],
    temperature: 0,
    maxNewTokens: 16,
    ignoreEos: true,
  });
  await gen.generate(request(0)); // warm up
  const began = performance.now();
  const outs = await Promise.all(Array.from({ length: batch }, (_, i) => gen.generate(request(i))));
  const s = (performance.now() - began) / 1000;
  tf.dispose([...model.params.values()]);
  return outs.reduce((n, o) => n + o.outputIds.length, 0) / s;
}

async function measure(backend: 'native' | 'webgpu'): Promise<Row> {
  let engine = '';
  await initEngine({ backend, logger: (l) => (engine = l) });
  const matmul = await matmulGflops(512);
  const s = await sft(backend);
  const decodeRates: Record<number, number> = {};
  for (const b of [1, 8]) decodeRates[b] = await decode(b);
  return {
    engine,
    matmulGflops: matmul,
    sftTokensPerS: s.tokensPerS,
    losses: s.losses,
    decode: decodeRates,
  };
}

const started = new Date();
const native = await measure('native');
const webgpu = await measure('webgpu');
const f = (x: number, d = 1) => x.toFixed(d);
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
console.log(
  `pnpm bench webgpu, ${started.toISOString().slice(0, 16).replace('T', ' ')} UTC, ` +
    `${availableParallelism()} cores ${cpus()[0]?.model.trim() ?? ''}, load ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} at the end`,
);
console.log(`native: ${native.engine}`);
console.log(`webgpu: ${webgpu.engine}\n`);
console.log('| measure | native | webgpu | webgpu / native |');
console.log('| --- | ---: | ---: | ---: |');
const row = (name: string, a: number, b: number) =>
  console.log(`| ${name} | ${f(a)} | ${f(b)} | ${ratio(b, a)} |`);
row('matmul 512^3, GFLOP/s', native.matmulGflops, webgpu.matmulGflops);
row(`SFT tokens/s (median of steps 2-${STEPS})`, native.sftTokensPerS, webgpu.sftTokensPerS);
for (const b of [1, 8])
  row(`greedy decode tokens/s, batch ${b}`, native.decode[b]!, webgpu.decode[b]!);
const worst = native.losses.reduce(
  (w, l, i) => Math.max(w, Math.abs((webgpu.losses[i] ?? Number.NaN) - l) / Math.abs(l)),
  0,
);
console.log(
  `\nSFT losses, largest relative difference webgpu vs native over ${native.losses.length} steps: ${worst.toExponential(2)}`,
);
rmSync(dir, { recursive: true, force: true });
process.exit(0);

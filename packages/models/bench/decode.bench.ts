// `pnpm bench decode [--threads N] [--new N] [--quick]`: generation at the Qwen3-0.6B shape
// (random weights made in memory, no download): decode tokens/s at batch 1, 8 and 64 (every
// request submitted at once, greedy, counted from the step after the last prefill, after a
// 2-token run of the same batch that allocates its KV blocks), prefill
// tokens/s of one 512-token prompt, and peak RSS, for rl2 with float32 and bfloat16 weights
// and for PyTorch 1.13 (scripts/bench_decode_torch.py, float32; skipped with a line when
// /usr/bin/python3 has no torch). Each engine runs in its own process (peak RSS is its own).
// The bandwidth limit: a 2-thread read of a 1 GiB buffer (best of torch sum and dot; none without
// torch) / the weight bytes a decode step reads, tokens/s at batch 1. The compute limit: torch's
// float32 GFLOP/s on a 2048^3 product / 2 flops per weight per token, tokens/s at any batch; it
// bounds batch 64 / batch 8 (printed beside the table). Each rl2 row also measures its own
// products' GFLOP/s at 64 x 1024 x 3072 (an MLP projection at batch 64, its weights in cache), the
// rate that bounds it: bfloat16 weights on AVX512_BF16 take dot products at about twice float32's.
// llama.cpp rows (bench/decode-llama.ts): node-llama-cpp's prebuilt CPU binary on F32 and BF16
// GGUF files written by scripts/write-gguf.ts from a bf16 checkpoint of the same shape (seed 1),
// same prompts and threads; skipped with a line when node-llama-cpp cannot load.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { decodeKernels, initEngine, type WeightDtype } from '@rl2/engine';
import { QWEN3_0_6B } from '../scripts/real-size-checkpoint.js';
import { createGenerator, initRandomModel } from '../src/index.js';
import type { LlamaOptions } from './decode-llama.js';

const HERE = import.meta.dirname;
const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const THREADS = flag('--threads', 2);
const QUICK = args.includes('--quick');
const NEW = flag('--new', QUICK ? 4 : 16);
const BATCHES = QUICK ? [1, 8] : [1, 8, 64];
const PROMPT = 16;
const PREFILL = 512;

interface Row {
  engine: string;
  decode: Record<number, number>;
  prefill: number;
  peakRssMb: number;
  /** rl2 rows: the decode products' tiles and GFLOP/s at 64 x 1024 x 3072 */
  products?: string;
  productGflops?: number;
}

/** GFLOP/s of the decode product y [64, 3072] = x [64, 1024] W^T with W of `dtype`. */
function productGflops(dtype: WeightDtype): number {
  const k = decodeKernels()!;
  const [rows, inF, outF] = [64, 1024, 3072];
  const x = Float32Array.from({ length: rows * inF }, (_, i) => Math.sin(i));
  const f = Float32Array.from({ length: inF * outF }, (_, i) => 0.02 * Math.cos(i));
  const w = dtype === 'float32' ? f : new Uint16Array(f.length);
  if (w instanceof Uint16Array) k.halfBits(f, dtype as 'bfloat16' | 'float16', w);
  const y = new Float32Array(rows * outF);
  k.linear(x, w, dtype, rows, inF, outF, y);
  const reps = 40;
  const t0 = performance.now();
  for (let i = 0; i < reps; i++) k.linear(x, w, dtype, rows, inF, outF, y);
  return (2 * rows * inF * outF * reps) / ((performance.now() - t0) / 1000) / 1e9;
}

const promptIds = (r: number, vocab: number) =>
  Array.from({ length: PROMPT }, (_, t) => (r * 131 + t * 17 + 1) % vocab);
const prefillIds = (vocab: number) =>
  Array.from({ length: PREFILL }, (_, t) => (t * 31 + 7) % vocab);
const llamaOptions = (): LlamaOptions => ({
  threads: THREADS,
  batches: BATCHES,
  newTokens: NEW,
  prompt: PROMPT,
  prefill: PREFILL,
  promptIds: (r) => promptIds(r, QWEN3_0_6B.vocabSize),
  prefillIds: prefillIds(QWEN3_0_6B.vocabSize),
});

/** Decode tokens/s of `batch` greedy requests of PROMPT tokens and `n` new tokens each. */
async function decodeRate(
  gen: ReturnType<typeof createGenerator>,
  batch: number,
  n: number,
  vocab: number,
) {
  const firsts: number[] = [];
  let last = 0;
  let total = 0;
  await Promise.all(
    Array.from({ length: batch }, (_, r) => {
      let first = true;
      return gen.generate({
        inputIds: promptIds(r, vocab),
        temperature: 0,
        maxNewTokens: n,
        ignoreEos: true,
        onToken: () => {
          const now = performance.now();
          if (first) firsts.push(now);
          first = false;
          last = now;
          total += 1;
        },
      });
    }),
  );
  const start = Math.max(...firsts);
  return (total - batch) / ((last - start) / 1000);
}

/** One engine's rows, in this process (a child of the bench). */
async function child(dtype: WeightDtype): Promise<Row> {
  await initEngine({ backend: 'native', threads: THREADS, logger: () => {} });
  const model = initRandomModel(QWEN3_0_6B, 1);
  const vocab = QWEN3_0_6B.vocabSize;
  const decode: Record<number, number> = {};
  for (const b of BATCHES) {
    const gen = createGenerator(model, { maxBatch: b, weightDtype: dtype });
    // first use: the 16-bit copies and the KV blocks of b rows (llama.cpp allocates its context's
    // KV cache before its timed run too), page faults
    await decodeRate(gen, b, 2, vocab);
    decode[b] = await decodeRate(gen, b, b >= 64 ? Math.max(4, NEW / 2) : NEW, vocab);
  }
  const gen = createGenerator(model, { maxBatch: 1, weightDtype: dtype });
  const t0 = performance.now();
  let t1 = 0;
  await gen.generate({
    inputIds: prefillIds(vocab),
    temperature: 0,
    maxNewTokens: 1,
    onToken: () => {
      t1 = performance.now();
    },
  });
  const peakRssMb = process.resourceUsage().maxRSS / 1024;
  const products = dtype === 'bfloat16' ? decodeKernels()!.products() : 'float32 input';
  return {
    engine: `rl2 ${dtype}`,
    decode,
    prefill: PREFILL / ((t1 - t0) / 1000),
    peakRssMb,
    products,
    productGflops: productGflops(dtype),
  };
}

function run(cmd: string, argv: string[]): unknown {
  const r = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed: ${r.stderr.slice(-2000)}`);
  const line = r.stdout.trim().split('\n').pop()!;
  return JSON.parse(line);
}

async function main() {
  const i = args.indexOf('--child');
  if (i >= 0) {
    console.log(JSON.stringify(await child(args[i + 1] as WeightDtype)));
    return;
  }
  const l = args.indexOf('--llama');
  if (l >= 0) {
    const dtype = args[l + 2] as 'float32' | 'bfloat16';
    const { llamaRow } = await import('./decode-llama.js');
    console.log(JSON.stringify(await llamaRow(args[l + 1]!, dtype, llamaOptions())));
    return;
  }
  if (args.includes('--write-ggufs')) {
    const { writeBenchGgufs } = await import('./decode-llama.js');
    console.log(JSON.stringify(await writeBenchGgufs()));
    return;
  }
  const tsx = join(HERE, '..', '..', '..', 'node_modules', '.bin', 'tsx');
  const self = join(HERE, 'decode.bench.ts');
  const passThrough = [
    '--threads',
    String(THREADS),
    '--new',
    String(NEW),
    ...(QUICK ? ['--quick'] : []),
  ];
  const rows: Row[] = [];
  for (const dtype of ['float32', 'bfloat16']) {
    rows.push(run(tsx, [self, '--child', dtype, ...passThrough]) as Row);
    console.log(JSON.stringify(rows[rows.length - 1])); // kept if a later engine fails
  }
  rows.push(...(await llamaRows(tsx, self, passThrough)));
  const torchScript = join(HERE, '..', 'scripts', 'bench_decode_torch.py');
  const python = '/usr/bin/python3';
  const hasTorch =
    existsSync(python) &&
    spawnSync(python, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
  let gbPerS: number;
  let gflops = Number.NaN;
  let bwHow: string;
  if (hasTorch) {
    const batches = BATCHES.join(',');
    const t = run(python, [
      torchScript,
      '--threads',
      String(THREADS),
      '--new',
      String(NEW),
      '--batches',
      batches,
    ]) as Row & {
      bandwidthGbPerS: number;
      sgemmGflopS: number;
    };
    rows.push(t);
    gbPerS = t.bandwidthGbPerS;
    gflops = t.sgemmGflopS;
    bwHow = `best of torch sum and dot over 1 GiB, ${THREADS} threads`;
  } else {
    console.log('PyTorch: skipped (/usr/bin/python3 has no torch); bandwidth not measured');
    gbPerS = Number.NaN;
    bwHow = 'not measured';
  }
  const f32Bytes = paramCount() * 4;
  const limit = (bytes: number) => gbPerS / (bytes / 1e9);
  console.log(
    `bandwidth ${gbPerS.toFixed(1)} GB/s (${bwHow}); decode limit at batch 1: ` +
      `${limit(f32Bytes).toFixed(1)} tok/s float32, ${limit(f32Bytes / 2).toFixed(1)} tok/s 16-bit`,
  );
  sayComputeLimit(gflops, rows);
  console.log(
    `\n| engine | ${BATCHES.map((b) => `decode tok/s b${b}`).join(' | ')} | prefill ${PREFILL} tok/s | peak RSS MB | b1 / limit |`,
  );
  console.log(`|---|${BATCHES.map(() => '---:').join('|')}|---:|---:|---:|`);
  for (const r of rows) {
    const bytes = r.engine.includes('bfloat16') ? f32Bytes / 2 : f32Bytes;
    const frac = r.decode[1]! / limit(bytes);
    console.log(
      `| ${r.engine} | ${BATCHES.map((b) => r.decode[b]!.toFixed(1)).join(' | ')} | ${r.prefill.toFixed(0)} | ` +
        `${r.peakRssMb.toFixed(0)} | ${Number.isNaN(frac) ? '-' : `${(100 * frac).toFixed(0)}%`} |`,
    );
  }
}

/** The llama.cpp rows, each in its own process; none (and a line) if node-llama-cpp cannot load. */
async function llamaRows(tsx: string, self: string, passThrough: string[]): Promise<Row[]> {
  try {
    await (await import('./decode-llama.js')).canLoadLlama();
  } catch (e) {
    console.log(
      `llama.cpp: skipped (node-llama-cpp cannot load: ${(e as Error).message.split('\n')[0]})`,
    );
    return [];
  }
  const ggufs = run(tsx, [self, '--write-ggufs']) as { dir: string; f32: string; bf16: string };
  const rows: Row[] = [];
  try {
    for (const [path, dtype] of [
      [ggufs.f32, 'float32'],
      [ggufs.bf16, 'bfloat16'],
    ])
      rows.push(run(tsx, [self, '--llama', path!, dtype!, ...passThrough]) as Row);
    for (const r of rows) console.log(JSON.stringify(r));
  } finally {
    rmSync(ggufs.dir, { recursive: true, force: true });
  }
  return rows;
}

/**
 * The compute limit (2 flops per weight per token at the measured float32 GFLOP/s) and, for each
 * rl2 row, the limit at its own products' GFLOP/s and the batch 64 / batch 8 ratio that rate
 * allows (limit / b8; a guide, not exact: one product's rate, measured once).
 */
function sayComputeLimit(gflops: number, rows: Row[]): void {
  const tokS = (g: number) => (g * 1e9) / (2 * paramCount());
  if (!Number.isNaN(gflops))
    console.log(
      `compute ${gflops.toFixed(1)} GFLOP/s (torch float32 2048^3, ${THREADS} threads); ` +
        `decode limit at any batch: ${tokS(gflops).toFixed(1)} tok/s`,
    );
  for (const r of rows.filter((r) => r.productGflops)) {
    const limit = tokS(r.productGflops!);
    const ratio =
      r.decode[8] && r.decode[64]
        ? `; b64/b8 ${(r.decode[64] / r.decode[8]).toFixed(2)}x, the products' rate allows ${(limit / r.decode[8]).toFixed(2)}x`
        : '';
    console.log(
      `${r.engine} products (${r.products}): ${r.productGflops!.toFixed(0)} GFLOP/s at 64x1024x3072, ` +
        `decode limit ${limit.toFixed(1)} tok/s${ratio}`,
    );
  }
}

/** Parameters of the 0.6B shape (tied head counted once). */
function paramCount(): number {
  const s = QWEN3_0_6B;
  const d = s.headDim!;
  const layer =
    s.hiddenSize * d * (2 * s.numHeads + 2 * s.numKvHeads!) + 3 * s.hiddenSize * s.intermediateSize;
  return s.numLayers * layer + s.vocabSize * s.hiddenSize;
}

await main();

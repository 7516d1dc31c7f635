// `serveModel`'s load-time checks: a tokenizer with more ids than the model's embedding fails
// the start, naming both files and sizes (it used to start and blame clients with 400s).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initModelCheckpoint } from '@rl2/models';
import { afterAll, describe, expect, it } from 'vitest';
import { ADDITION_TOKENIZER } from '../../test/tiny-checkpoint.js';
import { serveModel } from './serve-model.js';

const dir = mkdtempSync(join(tmpdir(), 'rl2-serve-vocab-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('serveModel', () => {
  it('refuses to start when the tokenizer has more ids than the embedding (99 tokens, vocab_size 50)', async () => {
    await initModelCheckpoint(dir, {
      family: 'qwen3',
      vocabSize: 50,
      hiddenSize: 16,
      intermediateSize: 32,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
    });
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(join(ADDITION_TOKENIZER, f), join(dir, f));
    const err = await serveModel({
      model: dir,
      port: 0,
      backend: 'cpu',
      threads: 1,
      log: () => {},
    }).catch((e: Error) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toContain(`--model ${dir}`);
    expect(message).toContain(`${join(dir, 'tokenizer.json')} has 99 tokens`);
    expect(message).toContain(`${join(dir, 'config.json')} has vocab_size 50`);
  });
});

import { copyFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { initModelCheckpoint } from '@rl2/models';
import { tempDir } from '@rl2/vitest-config/temp-dir';

/** The 99-token BPE tokenizer of examples/addition, with a ChatML chat template (<|im_end|> = 2). */
export const ADDITION_TOKENIZER = resolve(
  import.meta.dirname,
  '../../../examples/addition/tokenizer',
);

/**
 * A tiny random Qwen3 checkpoint with the addition tokenizer, in a new temp folder: what
 * `rl2 serve --model` loads in the tests (99 ids, context 256, eos <|im_end|>).
 */
export async function writeTinyCheckpoint(seed = 1): Promise<string> {
  const dir = tempDir('rl2-serve-');
  await initModelCheckpoint(
    dir,
    {
      family: 'qwen3',
      vocabSize: 99,
      hiddenSize: 16,
      intermediateSize: 32,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
      eosTokenId: 2,
      bosTokenId: 1,
      maxPositionEmbeddings: 256,
      initializerRange: 0.5,
    },
    { seed },
  );
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(ADDITION_TOKENIZER, f), join(dir, f));
  return dir;
}

import { join } from 'node:path';
import type { ModelConfig } from '../config/model-config.js';
import { ModelsError } from '../errors.js';

/**
 * Throws `SHAPE_MISMATCH` when a tokenizer of `tokenizerVocabSize` ids (added tokens
 * included) can produce ids the model's embedding has no row for. A smaller tokenizer is fine
 * (Qwen pads its embedding past the tokenizer). Checked at load, so that the first forward does
 * not fail on a request with an id out of range. The message names both files and sizes.
 */
export function checkTokenizerFits(
  tokenizerVocabSize: number,
  config: ModelConfig,
  dirs: { tokenizerDir: string; modelDir: string },
): void {
  if (tokenizerVocabSize <= config.vocabSize) return;
  throw new ModelsError(
    'SHAPE_MISMATCH',
    `the tokenizer ${join(dirs.tokenizerDir, 'tokenizer.json')} has ${tokenizerVocabSize} tokens ` +
      `but the model ${join(dirs.modelDir, 'config.json')} has vocab_size ${config.vocabSize}: ` +
      'ids from ' +
      `${config.vocabSize} on have no embedding row; use the tokenizer the model was trained with ` +
      '(or a model whose vocab_size is at least the tokenizer size)',
  );
}

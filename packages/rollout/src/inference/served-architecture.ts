import { type ModelConfig, readModelConfig } from '@rl2/models';
import { RolloutError } from '../errors.js';

/**
 * The config.json fields that fix a served model's tensor shapes and its token ids: a weight
 * update must keep each of them, or the tokenizer and the HTTP API's checks (vocabulary,
 * context) no longer describe the model (SGLang refuses such an update as well).
 */
const ARCHITECTURE_FIELDS: ReadonlyArray<[string, (c: ModelConfig) => unknown]> = [
  ['architectures', (c) => c.architecture],
  ['vocab_size', (c) => c.vocabSize],
  ['hidden_size', (c) => c.hiddenSize],
  ['intermediate_size', (c) => c.intermediateSize],
  ['num_hidden_layers', (c) => c.numLayers],
  ['num_attention_heads', (c) => c.numHeads],
  ['num_key_value_heads', (c) => c.numKvHeads],
  ['head_dim', (c) => c.headDim],
  ['tie_word_embeddings', (c) => c.tieWordEmbeddings],
  ['attention_bias', (c) => `${c.qkvBias}/${c.outputBias}`],
  ['mlp_bias', (c) => c.mlpBias],
  ['max_position_embeddings', (c) => c.maxPositionEmbeddings],
];

/**
 * Reads `path`/config.json and throws (before any weight is read) when it describes another
 * architecture than `served`, naming each differing field with both values. The tensor shapes
 * are then checked against that same config when the weights load.
 */
export async function checkServedArchitecture(served: ModelConfig, path: string): Promise<void> {
  const next = await readModelConfig(path);
  const diffs: string[] = [];
  for (const [field, get] of ARCHITECTURE_FIELDS) {
    const [was, now] = [get(served), get(next)];
    if (was !== now) diffs.push(`${field} ${String(now)} (served: ${String(was)})`);
  }
  if (diffs.length === 0) return;
  throw new RolloutError(
    'INVALID_ARGUMENT',
    `${path}/config.json describes another model than the one served: ${diffs.join(', ')}; ` +
      'update_weights_from_disk only swaps weights of the same architecture and vocabulary ' +
      '(restart rl2 serve --model with the new checkpoint to serve another model)',
  );
}

import * as tf from '@tensorflow/tfjs-core';
import { type FrozenMatrix, frozenLinear } from '@rl2/engine';
import { halfToFloat } from '../checkpoint/float-formats.js';
import type { ModelConfig } from '../config/model-config.js';
import { ModelsError } from '../errors.js';
import { denseLinear, type LinearFactory } from '../layers/linear.js';

/**
 * Frozen base matrices kept in their stored 16-bit dtype (a LoRA base loaded with
 * `frozenBase: 'bfloat16'`), by HF name; they are no parameters (no variable, no gradient).
 */
export type FrozenWeights = ReadonlyMap<string, FrozenMatrix>;

export const EMBED_NAME = 'model.embed_tokens.weight';

const PROJECTION =
  /^model\.layers\.\d+\.(self_attn\.[qkvo]_proj|mlp\.(gate|up|down)_proj)\.weight$/;

/** Whether `name` is a matrix a frozen base keeps in 16 bits: a projection, the embedding, an untied LM head. */
export function isFrozenMatrixName(config: ModelConfig, name: string): boolean {
  if (PROJECTION.test(name) || name === EMBED_NAME) return true;
  return name === 'lm_head.weight' && !config.tieWordEmbeddings && config.head === 'causal-lm';
}

/** The LM head's frozen matrix (the embedding's when tied), if the model keeps it in 16 bits. */
export function frozenHead(config: ModelConfig, frozen?: FrozenWeights): FrozenMatrix | undefined {
  return frozen?.get(config.tieWordEmbeddings ? EMBED_NAME : 'lm_head.weight');
}

/** `fallback`'s linear layers, but y = x W^T (+ b) by `frozenLinear` where W is a frozen 16-bit matrix. */
export function frozenAwareLinear(
  frozen: FrozenWeights,
  fallback: LinearFactory = denseLinear,
): LinearFactory {
  return (name, params) => {
    const w = frozen.get(`${name}.weight`);
    if (!w) return fallback(name, params);
    const bias = params.get(`${name}.bias`);
    return {
      name,
      forward: (x) => {
        const y = frozenLinear(x, w);
        return bias ? (tf.add(y, bias) as tf.Tensor2D) : y;
      },
    };
  };
}

/** Rows `ids` of a frozen 16-bit table widened to float32 [N, H] (an embedding lookup; a constant). */
export function frozenRowsGather(table: FrozenMatrix, ids: ArrayLike<number>): tf.Tensor2D {
  const h = table.shape[1];
  const out = new Float32Array(ids.length * h);
  const bits = new Uint32Array(out.buffer);
  const vocab = table.shape[0];
  for (let r = 0; r < ids.length; r++) {
    const id = ids[r]!;
    if (!(id >= 0 && id < vocab))
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `token id ${id} is outside the vocabulary [0, ${vocab})`,
      );
    const src = table.bits.subarray(id * h, (id + 1) * h);
    if (table.dtype === 'bfloat16') for (let k = 0; k < h; k++) bits[r * h + k] = src[k]! << 16;
    else for (let k = 0; k < h; k++) out[r * h + k] = halfToFloat(src[k]!);
  }
  return tf.tensor2d(out, [ids.length, h]);
}

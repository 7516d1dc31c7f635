import type { ModelConfig } from '../config/model-config.js';
import { layerParamNames } from '../layers/decoder-layer.js';

/** Every parameter of a model with its HF name and shape, in checkpoint order. */
export function paramShapes(c: ModelConfig): Map<string, number[]> {
  const out = new Map<string, number[]>();
  const H = c.hiddenSize;
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  out.set('model.embed_tokens.weight', [c.vocabSize, H]);
  for (let i = 0; i < c.numLayers; i++) {
    for (const name of layerParamNames(c, i)) {
      const leaf = name.slice(`model.layers.${i}.`.length);
      const shape: Record<string, number[]> = {
        'input_layernorm.weight': [H],
        'post_attention_layernorm.weight': [H],
        'self_attn.q_proj.weight': [qDim, H],
        'self_attn.q_proj.bias': [qDim],
        'self_attn.k_proj.weight': [kvDim, H],
        'self_attn.k_proj.bias': [kvDim],
        'self_attn.v_proj.weight': [kvDim, H],
        'self_attn.v_proj.bias': [kvDim],
        'self_attn.o_proj.weight': [H, qDim],
        'self_attn.o_proj.bias': [H],
        'mlp.gate_proj.weight': [c.intermediateSize, H],
        'mlp.gate_proj.bias': [c.intermediateSize],
        'mlp.up_proj.weight': [c.intermediateSize, H],
        'mlp.up_proj.bias': [c.intermediateSize],
        'mlp.down_proj.weight': [H, c.intermediateSize],
        'mlp.down_proj.bias': [H],
        'self_attn.q_norm.weight': [c.headDim],
        'self_attn.k_norm.weight': [c.headDim],
      };
      out.set(name, shape[leaf]!);
    }
  }
  out.set('model.norm.weight', [H]);
  if (c.head === 'value') {
    out.set('score.weight', [1, H]);
    out.set('score.bias', [1]);
  } else if (!c.tieWordEmbeddings) {
    out.set('lm_head.weight', [c.vocabSize, H]);
  }
  return out;
}

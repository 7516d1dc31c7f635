import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../checkpoint/rng.js';
import { encodeTensorFile, type NamedArrays } from '../checkpoint/tensor-file.js';
import { TrainersError } from '../errors.js';
import { copyTokenizerFiles, readTokenizerFacts } from './tokenizer-files.js';

/** Decoder families `rl2 init-model --arch` writes. */
export type ModelArch = 'llama' | 'qwen2' | 'qwen3';
export const MODEL_ARCHS: readonly ModelArch[] = ['llama', 'qwen2', 'qwen3'];

/** Size of the random model; defaults give a ~0.1M-parameter decoder plus embeddings. */
export interface RandomModelOptions {
  readonly arch: ModelArch;
  readonly tokenizerDir: string;
  readonly outDir: string;
  readonly hiddenSize?: number;
  readonly intermediateSize?: number;
  readonly numLayers?: number;
  readonly numHeads?: number;
  readonly numKvHeads?: number;
  readonly headDim?: number;
  readonly maxPositionEmbeddings?: number;
  readonly tieWordEmbeddings?: boolean;
  readonly ropeTheta?: number;
  readonly initializerRange?: number;
  readonly seed?: number;
  /** Embedding rows (config vocab_size), at least the tokenizer's; e.g. a multiple of tp_size. Default: the tokenizer's. */
  readonly vocabSize?: number;
}

const ARCH = {
  llama: { architectures: ['LlamaForCausalLM'], model_type: 'llama', qkvBias: false, qkNorm: false },
  qwen2: { architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2', qkvBias: true, qkNorm: false },
  qwen3: { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', qkvBias: false, qkNorm: true },
} as const;

/**
 * Writes a randomly initialised Hugging Face checkpoint (config.json, model.safetensors in F32,
 * generation_config.json and the tokenizer files), initialised as transformers' `_init_weights`
 * does: linear and embedding weights ~ N(0, initializer_range), norms 1, biases 0.
 * Parameter names follow transformers' Llama/Qwen2/Qwen3 modules, so both rl2 and
 * `AutoModelForCausalLM.from_pretrained(outDir)` load it. Returns the config written.
 */
export function writeRandomCheckpoint(opts: RandomModelOptions): Record<string, unknown> {
  if (!MODEL_ARCHS.includes(opts.arch)) {
    throw new TrainersError('INVALID_ARGUMENT', `--arch ${opts.arch} is not supported; use one of ${MODEL_ARCHS.join(', ')}`);
  }
  const a = ARCH[opts.arch];
  const tok = readTokenizerFacts(opts.tokenizerDir);
  const hidden = opts.hiddenSize ?? 64;
  const heads = opts.numHeads ?? 4;
  const kvHeads = opts.numKvHeads ?? Math.max(1, heads / 2);
  const headDim = opts.headDim ?? hidden / heads;
  const inter = opts.intermediateSize ?? hidden * 2;
  const layers = opts.numLayers ?? 2;
  const tie = opts.tieWordEmbeddings ?? true;
  const std = opts.initializerRange ?? 0.02;
  const check = (ok: boolean, msg: string) => {
    if (!ok) throw new TrainersError('INVALID_ARGUMENT', msg);
  };
  check(Number.isInteger(headDim) && headDim > 0, `--hidden-size ${hidden} must be divisible by --heads ${heads} (or pass --head-dim)`);
  check(heads % kvHeads === 0, `--heads ${heads} must be a multiple of --kv-heads ${kvHeads}`);
  check(tok.vocabSize > 0, `${opts.tokenizerDir}/tokenizer.json has an empty vocabulary`);
  const vocab = opts.vocabSize ?? tok.vocabSize;
  check(Number.isInteger(vocab) && vocab >= tok.vocabSize, `--vocab-size ${vocab} must be an integer of at least the tokenizer's ${tok.vocabSize} tokens`);

  const rng = new Rng(opts.seed ?? 0);
  const arrays: NamedArrays = {};
  const normal = (name: string, shape: number[]) => {
    const data = new Float32Array(shape.reduce((x, y) => x * y, 1));
    for (let i = 0; i < data.length; i++) data[i] = rng.normal() * std;
    arrays[name] = { shape, data };
  };
  const fill = (name: string, shape: number[], value: number) => {
    arrays[name] = { shape, data: new Float32Array(shape.reduce((x, y) => x * y, 1)).fill(value) };
  };
  normal('model.embed_tokens.weight', [vocab, hidden]);
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}`;
    normal(`${p}.self_attn.q_proj.weight`, [heads * headDim, hidden]);
    normal(`${p}.self_attn.k_proj.weight`, [kvHeads * headDim, hidden]);
    normal(`${p}.self_attn.v_proj.weight`, [kvHeads * headDim, hidden]);
    if (a.qkvBias) {
      fill(`${p}.self_attn.q_proj.bias`, [heads * headDim], 0);
      fill(`${p}.self_attn.k_proj.bias`, [kvHeads * headDim], 0);
      fill(`${p}.self_attn.v_proj.bias`, [kvHeads * headDim], 0);
    }
    if (a.qkNorm) {
      fill(`${p}.self_attn.q_norm.weight`, [headDim], 1);
      fill(`${p}.self_attn.k_norm.weight`, [headDim], 1);
    }
    normal(`${p}.self_attn.o_proj.weight`, [hidden, heads * headDim]);
    normal(`${p}.mlp.gate_proj.weight`, [inter, hidden]);
    normal(`${p}.mlp.up_proj.weight`, [inter, hidden]);
    normal(`${p}.mlp.down_proj.weight`, [hidden, inter]);
    fill(`${p}.input_layernorm.weight`, [hidden], 1);
    fill(`${p}.post_attention_layernorm.weight`, [hidden], 1);
  }
  fill('model.norm.weight', [hidden], 1);
  if (!tie) normal('lm_head.weight', [vocab, hidden]);

  const config: Record<string, unknown> = {
    architectures: a.architectures,
    model_type: a.model_type,
    vocab_size: vocab,
    hidden_size: hidden,
    intermediate_size: inter,
    num_hidden_layers: layers,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    hidden_act: 'silu',
    max_position_embeddings: opts.maxPositionEmbeddings ?? 2048,
    rms_norm_eps: 1e-6,
    rope_theta: opts.ropeTheta ?? 10000,
    initializer_range: std,
    tie_word_embeddings: tie,
    attention_bias: a.qkvBias,
    attention_dropout: 0,
    bos_token_id: tok.bosTokenId,
    eos_token_id: tok.eosTokenId,
    pad_token_id: tok.padTokenId,
    torch_dtype: 'float32',
    use_cache: true,
    ...(opts.arch === 'llama' ? { mlp_bias: false, pretraining_tp: 1 } : { use_sliding_window: false, sliding_window: null, max_window_layers: layers }),
  };
  mkdirSync(opts.outDir, { recursive: true });
  writeFileSync(join(opts.outDir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  writeFileSync(join(opts.outDir, 'model.safetensors'), encodeTensorFile(arrays, { format: 'pt' }));
  copyTokenizerFiles(opts.tokenizerDir, opts.outDir);
  writeFileSync(
    join(opts.outDir, 'generation_config.json'),
    `${JSON.stringify({ bos_token_id: tok.bosTokenId, eos_token_id: tok.eosTokenId, pad_token_id: tok.padTokenId }, null, 2)}\n`,
  );
  return config;
}

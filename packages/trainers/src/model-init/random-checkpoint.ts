import { SeededRng } from '@rl2/data';
import {
  type CheckpointFormat,
  CheckpointWriter,
  DEFAULT_MAX_SHARD_SIZE,
  parseShardSize,
  TORCH_DTYPES,
  type TorchDtype,
} from '@rl2/models';
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
  /** Stored dtype: float32 (default), bfloat16 or float16 (`--dtype`). */
  readonly dtype?: string;
  /** Largest safetensors file, bytes or e.g. 5GB (default, as `save_pretrained`), 500MB (`--max-shard-size`). */
  readonly maxShardSize?: number | string;
}

/** How one tensor starts: N(0, initializer_range), or filled with a constant. */
type Init = { name: string; shape: number[]; fill?: number };

const ARCH = {
  llama: {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    qkvBias: false,
    qkNorm: false,
  },
  qwen2: { architectures: ['Qwen2ForCausalLM'], model_type: 'qwen2', qkvBias: true, qkNorm: false },
  qwen3: { architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', qkvBias: false, qkNorm: true },
} as const;

/**
 * Writes a randomly initialised Hugging Face checkpoint (config.json, model.safetensors or
 * shards with their index in `format.dtype`, default F32, generation_config.json and the
 * tokenizer files) through the streaming, atomic @rl2/models writer, initialised as
 * transformers' `_init_weights` does: linear and embedding weights ~ N(0, initializer_range),
 * norms 1, biases 0.
 * Parameter names follow transformers' Llama/Qwen2/Qwen3 modules, so both rl2 and
 * `AutoModelForCausalLM.from_pretrained(outDir)` load it. Returns the config written.
 */
export function writeRandomCheckpoint(opts: RandomModelOptions): Record<string, unknown> {
  if (!MODEL_ARCHS.includes(opts.arch)) {
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `--arch ${opts.arch} is not supported; use one of ${MODEL_ARCHS.join(', ')}`,
    );
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
  check(
    Number.isInteger(headDim) && headDim > 0,
    `--hidden-size ${hidden} must be divisible by --heads ${heads} (or pass --head-dim)`,
  );
  check(heads % kvHeads === 0, `--heads ${heads} must be a multiple of --kv-heads ${kvHeads}`);
  check(tok.vocabSize > 0, `${opts.tokenizerDir}/tokenizer.json has an empty vocabulary`);
  const vocab = opts.vocabSize ?? tok.vocabSize;
  check(
    Number.isInteger(vocab) && vocab >= tok.vocabSize,
    `--vocab-size ${vocab} must be an integer of at least the tokenizer's ${tok.vocabSize} tokens`,
  );
  const format = checkpointFormat(opts);

  const tensors = tensorInits({ hidden, heads, kvHeads, headDim, inter, layers, vocab, tie, ...a });
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
    torch_dtype: format.dtype,
    use_cache: true,
    ...(opts.arch === 'llama'
      ? { mlp_bias: false, pretraining_tp: 1 }
      : { use_sliding_window: false, sliding_window: null, max_window_layers: layers }),
  };
  writeTensors(opts.outDir, tensors, { format, std, seed: opts.seed ?? 0 }, (writer) => {
    copyTokenizerFiles(opts.tokenizerDir, writer.workDir);
    writer.writeJson('config.json', config);
    writer.writeJson('generation_config.json', {
      bos_token_id: tok.bosTokenId,
      eos_token_id: tok.eosTokenId,
      pad_token_id: tok.padTokenId,
    });
  });
  return config;
}

/** `dtype` and `maxShardSize` checked, with the `rl2 init-model` flag in errors. */
function checkpointFormat(opts: RandomModelOptions): { dtype: TorchDtype; maxShardSize: number } {
  const dtype = opts.dtype ?? 'float32';
  if (!(dtype in TORCH_DTYPES))
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `--dtype ${dtype} is not a checkpoint dtype; use one of ${Object.keys(TORCH_DTYPES).join(', ')}`,
    );
  try {
    return {
      dtype: dtype as TorchDtype,
      maxShardSize: parseShardSize(opts.maxShardSize ?? DEFAULT_MAX_SHARD_SIZE, '--max-shard-size'),
    };
  } catch (e) {
    throw new TrainersError('INVALID_ARGUMENT', (e as Error).message);
  }
}

/** The tensors of the model, in module order (transformers' names). */
function tensorInits(d: {
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  inter: number;
  layers: number;
  vocab: number;
  tie: boolean;
  qkvBias: boolean;
  qkNorm: boolean;
}): Init[] {
  const out: Init[] = [{ name: 'model.embed_tokens.weight', shape: [d.vocab, d.hidden] }];
  for (let l = 0; l < d.layers; l++) {
    const p = `model.layers.${l}`;
    out.push({ name: `${p}.self_attn.q_proj.weight`, shape: [d.heads * d.headDim, d.hidden] });
    out.push({ name: `${p}.self_attn.k_proj.weight`, shape: [d.kvHeads * d.headDim, d.hidden] });
    out.push({ name: `${p}.self_attn.v_proj.weight`, shape: [d.kvHeads * d.headDim, d.hidden] });
    if (d.qkvBias) {
      out.push({ name: `${p}.self_attn.q_proj.bias`, shape: [d.heads * d.headDim], fill: 0 });
      out.push({ name: `${p}.self_attn.k_proj.bias`, shape: [d.kvHeads * d.headDim], fill: 0 });
      out.push({ name: `${p}.self_attn.v_proj.bias`, shape: [d.kvHeads * d.headDim], fill: 0 });
    }
    if (d.qkNorm) {
      out.push({ name: `${p}.self_attn.q_norm.weight`, shape: [d.headDim], fill: 1 });
      out.push({ name: `${p}.self_attn.k_norm.weight`, shape: [d.headDim], fill: 1 });
    }
    out.push({ name: `${p}.self_attn.o_proj.weight`, shape: [d.hidden, d.heads * d.headDim] });
    out.push({ name: `${p}.mlp.gate_proj.weight`, shape: [d.inter, d.hidden] });
    out.push({ name: `${p}.mlp.up_proj.weight`, shape: [d.inter, d.hidden] });
    out.push({ name: `${p}.mlp.down_proj.weight`, shape: [d.hidden, d.inter] });
    out.push({ name: `${p}.input_layernorm.weight`, shape: [d.hidden], fill: 1 });
    out.push({ name: `${p}.post_attention_layernorm.weight`, shape: [d.hidden], fill: 1 });
  }
  out.push({ name: 'model.norm.weight', shape: [d.hidden], fill: 1 });
  if (!d.tie) out.push({ name: 'lm_head.weight', shape: [d.vocab, d.hidden] });
  return out;
}

/**
 * Draws each tensor in module order (one at a time: memory is one tensor, whatever the model
 * size) and streams it into the checkpoint at `dir`; `addFiles` adds the rest before the
 * checkpoint is swapped in atomically.
 */
function writeTensors(
  dir: string,
  tensors: Init[],
  o: { format?: CheckpointFormat; std: number; seed: number },
  addFiles: (w: CheckpointWriter) => void,
): void {
  const writer = CheckpointWriter.open(dir, tensors, o.format);
  try {
    const rng = new SeededRng(o.seed);
    for (const t of tensors) {
      const data = new Float32Array(t.shape.reduce((x, y) => x * y, 1));
      if (t.fill !== undefined) data.fill(t.fill);
      else for (let i = 0; i < data.length; i++) data[i] = rng.normal() * o.std;
      writer.write(t.name, data);
    }
    addFiles(writer);
  } catch (e) {
    writer.abort();
    throw e;
  }
  writer.commit();
}

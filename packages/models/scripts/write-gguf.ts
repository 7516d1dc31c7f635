// Converts a Qwen3 safetensors checkpoint folder (config.json, model*.safetensors, tokenizer.json;
// rl2's or Hugging Face's) to a GGUF v3 file llama.cpp loads, F32 or BF16, as llama.cpp's
// convert_hf_to_gguf.py does for Qwen3ForCausalLM: the same metadata keys and tensor names, q/k
// kept as stored (Qwen3 needs no permutation; Llama's q/k would), 1-D tensors (norms) in F32.
//   npx tsx packages/models/scripts/write-gguf.ts MODEL_DIR OUT.gguf [--type f32|bf16]
import {
  closeSync,
  existsSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  decodeFloats,
  encodeFloats,
  type SafetensorsDtype,
} from '../src/checkpoint/float-formats.js';
import {
  alignUp,
  bytesPerElement,
  encodeHeader,
  GgmlType,
  type GgmlTypeId,
  type MetaValue,
  meta,
  type TensorInfo,
} from './gguf-file.js';
import { tokenizerMetadata } from './gguf-tokenizer.js';

export type GgufOutType = 'f32' | 'bf16';

interface SourceTensor {
  file: string;
  dtype: SafetensorsDtype;
  shape: number[];
  start: number;
  byteLength: number;
}

/** Every tensor of the folder's model*.safetensors files, by name. */
function listSafetensors(dir: string): Map<string, SourceTensor> {
  const files = readdirSync(dir).filter((f) => /^model.*\.safetensors$/.test(f));
  if (files.length === 0) throw new Error(`${dir}: no model*.safetensors file to convert`);
  const out = new Map<string, SourceTensor>();
  for (const f of files.sort()) {
    const file = join(dir, f);
    const fd = openSync(file, 'r');
    try {
      const len = Buffer.alloc(8);
      readSync(fd, len, 0, 8, 0);
      const n = Number(len.readBigUInt64LE(0));
      const json = Buffer.alloc(n);
      readSync(fd, json, 0, n, 8);
      const header = JSON.parse(json.toString('utf8')) as Record<string, unknown>;
      for (const [name, e] of Object.entries(header)) {
        if (name === '__metadata__') continue;
        const { dtype, shape, data_offsets } = e as {
          dtype: string;
          shape: number[];
          data_offsets: [number, number];
        };
        if (!['F32', 'BF16', 'F16'].includes(dtype))
          throw new Error(`${file}: ${name} is ${dtype}; only F32, BF16 and F16 convert`);
        const start = 8 + n + data_offsets[0];
        out.set(name, {
          file,
          dtype: dtype as SafetensorsDtype,
          shape,
          start,
          byteLength: data_offsets[1] - data_offsets[0],
        });
      }
    } finally {
      closeSync(fd);
    }
  }
  return out;
}

const LAYER_NAMES: Record<string, string> = {
  'input_layernorm.weight': 'attn_norm.weight',
  'self_attn.q_proj.weight': 'attn_q.weight',
  'self_attn.k_proj.weight': 'attn_k.weight',
  'self_attn.v_proj.weight': 'attn_v.weight',
  'self_attn.o_proj.weight': 'attn_output.weight',
  'self_attn.q_norm.weight': 'attn_q_norm.weight',
  'self_attn.k_norm.weight': 'attn_k_norm.weight',
  'post_attention_layernorm.weight': 'ffn_norm.weight',
  'mlp.gate_proj.weight': 'ffn_gate.weight',
  'mlp.up_proj.weight': 'ffn_up.weight',
  'mlp.down_proj.weight': 'ffn_down.weight',
};

/** llama.cpp's name for an HF Qwen3 tensor (gguf-py tensor_mapping.py), or an error naming it. */
export function ggufTensorName(hf: string): string {
  if (hf === 'model.embed_tokens.weight') return 'token_embd.weight';
  if (hf === 'model.norm.weight') return 'output_norm.weight';
  if (hf === 'lm_head.weight') return 'output.weight';
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  const tail = m && LAYER_NAMES[m[2]!];
  if (!m || !tail)
    throw new Error(`tensor ${hf} has no llama.cpp qwen3 name; is this a Qwen3 checkpoint?`);
  return `blk.${m[1]}.${tail}`;
}

/** The qwen3 architecture keys llama.cpp reads, from config.json. */
export function modelMetadata(
  config: Record<string, unknown>,
  outType: GgufOutType,
): Map<string, MetaValue> {
  if (config.model_type !== 'qwen3')
    throw new Error(
      `config.json model_type is ${JSON.stringify(config.model_type)}; write-gguf converts qwen3 only`,
    );
  const num = (key: string) => {
    const v = config[key];
    if (typeof v !== 'number') throw new Error(`config.json has no number ${key}`);
    return v;
  };
  const headDim =
    typeof config.head_dim === 'number'
      ? config.head_dim
      : num('hidden_size') / num('num_attention_heads');
  return new Map<string, MetaValue>([
    ['general.architecture', meta.str('qwen3')],
    ['general.name', meta.str('rl2 qwen3')],
    ['general.alignment', meta.u32(32)],
    ['general.file_type', meta.u32(outType === 'f32' ? 0 : 32)], // LlamaFileType ALL_F32 / MOSTLY_BF16
    ['qwen3.block_count', meta.u32(num('num_hidden_layers'))],
    ['qwen3.context_length', meta.u32(num('max_position_embeddings'))],
    ['qwen3.embedding_length', meta.u32(num('hidden_size'))],
    ['qwen3.feed_forward_length', meta.u32(num('intermediate_size'))],
    ['qwen3.attention.head_count', meta.u32(num('num_attention_heads'))],
    [
      'qwen3.attention.head_count_kv',
      meta.u32((config.num_key_value_heads as number) ?? num('num_attention_heads')),
    ],
    ['qwen3.attention.key_length', meta.u32(headDim)],
    ['qwen3.attention.value_length', meta.u32(headDim)],
    ['qwen3.rope.freq_base', meta.f32(num('rope_theta'))],
    ['qwen3.attention.layer_norm_rms_epsilon', meta.f32(num('rms_norm_eps'))],
  ]);
}

/** Tensor infos in file order (data packed at 32-byte aligned offsets). */
function planTensors(src: Map<string, SourceTensor>, outType: GgufOutType) {
  const plan: { info: TensorInfo; source: SourceTensor }[] = [];
  let offset = 0;
  for (const [hf, source] of src) {
    const type: GgmlTypeId =
      outType === 'bf16' && source.shape.length > 1 ? GgmlType.BF16 : GgmlType.F32;
    const info: TensorInfo = {
      name: ggufTensorName(hf),
      dims: [...source.shape].reverse(),
      type,
      offset,
    };
    plan.push({ info, source });
    offset = alignUp(offset + source.shape.reduce((a, b) => a * b, 1) * bytesPerElement(type));
  }
  return plan;
}

/** The bytes of `source` as `type` (read whole; the largest, the embeddings, is 0.6 GB in F32). */
function tensorBytes(source: SourceTensor, type: GgmlTypeId): Uint8Array {
  const raw = Buffer.alloc(source.byteLength);
  const fd = openSync(source.file, 'r');
  try {
    for (let at = 0; at < raw.length; )
      at += readSync(fd, raw, at, raw.length - at, source.start + at);
  } finally {
    closeSync(fd);
  }
  const want: SafetensorsDtype = type === GgmlType.F32 ? 'F32' : 'BF16';
  if (source.dtype === want) return raw;
  const floats = new Float32Array(raw.length / (source.dtype === 'F32' ? 4 : 2));
  decodeFloats(raw, source.dtype, floats, 0);
  const out = new Uint8Array(floats.length * bytesPerElement(type));
  encodeFloats(floats, want, out);
  return out;
}

/** Writes `outPath` from the checkpoint in `dir`; returns the tensor count. */
export function writeGguf(dir: string, outPath: string, outType: GgufOutType = 'bf16'): number {
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const tokenizerPath = join(dir, 'tokenizer.json');
  if (!existsSync(tokenizerPath))
    throw new Error(
      `${dir}: no tokenizer.json (GGUF embeds the vocabulary); copy the model's one in`,
    );
  const metadata = modelMetadata(config, outType);
  for (const [k, v] of tokenizerMetadata(tokenizerPath, config)) metadata.set(k, v);
  const plan = planTensors(listSafetensors(dir), outType);
  const header = encodeHeader(
    metadata,
    plan.map((p) => p.info),
  );
  const fd = openSync(outPath, 'w');
  try {
    writeSync(fd, header, 0, header.length, 0);
    for (const { info, source } of plan) {
      const bytes = tensorBytes(source, info.type);
      writeSync(fd, bytes, 0, bytes.length, header.length + info.offset);
    }
  } finally {
    closeSync(fd);
  }
  return plan.length;
}

if (process.argv[1]?.endsWith('write-gguf.ts')) {
  const [dir, out] = process.argv.slice(2);
  const i = process.argv.indexOf('--type');
  const type = (i >= 0 ? process.argv[i + 1] : 'bf16') as GgufOutType;
  if (!dir || !out || !['f32', 'bf16'].includes(type))
    throw new Error('usage: write-gguf.ts MODEL_DIR OUT.gguf [--type f32|bf16]');
  console.log(`${out}: ${writeGguf(dir, out, type)} tensors, ${type}`);
}

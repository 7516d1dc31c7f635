import { parseShardSize } from '@rl2/models';
import { z } from 'zod';
import { loraSection } from '../lora/lora-section.js';
import { option } from './option.js';

const shardSize = z.union([z.number().int().positive(), z.string().min(1)]).refine(
  (v) => {
    try {
      return parseShardSize(v) > 0;
    } catch {
      return false;
    }
  },
  { message: 'not a size: use bytes or a number with a unit, e.g. 5GB, 500MB, 2GiB' },
);

/** Defaults a trainer picks for a model section (RL2: actor lr 1e-6, critic lr 5e-6). */
export interface ModelSectionDefaults {
  readonly lr: number;
  readonly warmupRatio?: number;
}

/**
 * Model + optimizer + schedule knobs shared by `actor.*` (SFT, DPO) and `critic.*` (RM).
 * AdamW with decoupled weight decay, cosine schedule with linear warmup down to `min_lr`,
 * clipping by the global gradient norm.
 */
export function modelSection(defaults: ModelSectionDefaults) {
  return {
    model_name: option(
      z.string().min(1),
      null,
      'required: Hugging Face model folder (config.json, *.safetensors, tokenizer files) or hub ' +
        'id such as Qwen/Qwen3-0.6B (downloaded into the HF cache; HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE)',
    ),
    tokenizer_name: option(
      z.string().min(1).nullable(),
      null,
      'tokenizer folder or hub id (null: same as model_name)',
    ),
    gradient_checkpointing: option(
      z.boolean(),
      true,
      'recompute activations in backward to save memory',
    ),
    max_length_per_device: option(
      z.number().int().positive(),
      1024,
      'token budget of one packed micro-batch; every sequence (RM/DPO: pair) must fit',
    ),
    lr: option(z.number().positive(), defaults.lr, 'peak learning rate of AdamW'),
    min_lr: option(z.number().nonnegative(), 0, 'learning rate at the end of the cosine schedule'),
    weight_decay: option(z.number().nonnegative(), 1e-2, 'AdamW decoupled weight decay'),
    betas: option(
      z.tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)]),
      [0.9, 0.999],
      'AdamW (beta1, beta2)',
    ),
    eps: option(z.number().positive(), 1e-8, 'AdamW epsilon'),
    scheduler: option(
      z.enum(['cosine', 'constant']),
      'cosine',
      'learning-rate schedule after warmup',
    ),
    warmup_ratio: option(
      z.number().min(0).max(1),
      defaults.warmupRatio ?? 0.03,
      'fraction of the steps spent warming up linearly from 0',
    ),
    max_grad_norm: option(
      z.number().positive().nullable(),
      1.0,
      'clip gradients by their global L2 norm (null: no clipping)',
    ),
    save_dtype: option(
      z.enum(['bfloat16', 'float16', 'float32']).nullable(),
      null,
      "dtype of the saved model weights (null: the loaded checkpoint's torch_dtype); optimizer state stays float32",
    ),
    max_shard_size: option(
      shardSize,
      '5GB',
      'largest safetensors file of a saved model: bytes, or 5GB, 500MB, 2GiB (as save_pretrained)',
    ),
    lora: loraSection(),
  };
}

import { LORA_TARGET_MODULES } from '@rl2/models';
import { z } from 'zod';
import { option } from '../config/option.js';

/**
 * `<actor|critic>.lora.*`: train LoRA adapters (PEFT's `LoraConfig` names and defaults but r)
 * instead of every weight; rank 0 trains the full model.
 */
export function loraSection() {
  return z.strictObject({
    rank: option(
      z.number().int().nonnegative(),
      0,
      'LoRA rank r (PEFT r): >0 trains adapters on target_modules with the base frozen; 0 trains every weight',
    ),
    alpha: option(
      z.number().positive(),
      16,
      'LoRA alpha (PEFT lora_alpha): the update is scaled by alpha/r',
    ),
    dropout: option(
      z.number().min(0).lt(1),
      0,
      "dropout on the adapters' inputs in training passes (PEFT lora_dropout)",
    ),
    target_modules: option(
      z.array(z.enum(LORA_TARGET_MODULES)).min(1),
      [...LORA_TARGET_MODULES],
      'projections that get adapters, by PEFT name, e.g. [q_proj, v_proj]',
    ),
    modules_to_save: option(
      z.array(z.string().regex(/^[A-Za-z_][\w.]*$/, 'a module name such as embed_tokens')),
      [],
      'whole modules trained and saved beside the adapters (PEFT modules_to_save), by name or last parts: ' +
        'e.g. [embed_tokens, norm] (the embedding, tied LM head, and every RMSNorm); float32 copies, the base kept',
    ),
    use_rslora: option(
      z.boolean(),
      false,
      'rank-stabilised LoRA: scale by alpha/sqrt(r) instead of alpha/r',
    ),
    lr_ratio: option(
      z.number().positive(),
      1,
      "LoRA+ (PEFT loraplus_lr_ratio): the adapters' B matrices train at lr_ratio x lr, the A matrices " +
        'at lr; 1 is plain LoRA, the LoRA+ paper uses 16',
    ),
    modules_lr_ratio: option(
      z.number().positive(),
      1,
      "the modules_to_save copies (and a value model's score head) train at modules_lr_ratio x lr, " +
        'the adapters as lr and lr_ratio say',
    ),
    base_dtype: option(
      z.enum(['auto', 'float32', 'bfloat16']),
      'auto',
      'element type of the frozen base in memory (rl2 sft, rm, dpo): bfloat16 keeps a bfloat16 ' +
        "checkpoint's projections, embedding and LM head as stored (half the memory, converted in the " +
        'native kernels); auto: bfloat16 for a bfloat16 checkpoint on the native engine unless ' +
        'save_merged, else float32; rl2 ppo keeps a float32 base',
    ),
    save_merged: option(
      z.boolean(),
      false,
      'also write model/ in each checkpoint: the base with the adapters merged in (W + s B A), a plain HF model',
    ),
  });
}

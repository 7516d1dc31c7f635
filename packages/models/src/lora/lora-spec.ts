import type { ModelConfig } from '../config/model-config.js';
import { ModelsError } from '../errors.js';
import { paramShapes } from '../model/param-shapes.js';

/** The projections LoRA can adapt, by their PEFT names (the last part of the HF module name). */
export const LORA_TARGET_MODULES = [
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'gate_proj',
  'up_proj',
  'down_proj',
] as const;

export type LoraTargetModule = (typeof LORA_TARGET_MODULES)[number];

/**
 * A LoRA adapter's shape and scale (Hu et al. 2021, https://arxiv.org/abs/2106.09685):
 * y = W x + s * B A x with A [r, in], B [out, r] and s = alpha / r, or alpha / sqrt(r) with
 * rsLoRA (Kalajdzievski 2023, https://arxiv.org/abs/2312.03732). As PEFT's `LoraConfig`.
 */
export interface LoraSpec {
  readonly rank: number;
  readonly alpha: number;
  /** Dropout on the adapter's input while training (0: none). */
  readonly dropout: number;
  readonly targetModules: readonly LoraTargetModule[];
  readonly useRslora: boolean;
  /**
   * Whole modules trained beside the adapters and saved with them (PEFT `modules_to_save`), by
   * module name or its last parts, e.g. `embed_tokens`, `lm_head`, `norm`, `input_layernorm`.
   */
  readonly modulesToSave?: readonly string[];
}

/** The factor s of the low-rank update s * B A. */
export function loraScale(spec: Pick<LoraSpec, 'rank' | 'alpha' | 'useRslora'>): number {
  return spec.useRslora ? spec.alpha / Math.sqrt(spec.rank) : spec.alpha / spec.rank;
}

/** One adapted projection: its HF module name and its base weight's [out, in]. */
export interface LoraModule {
  readonly module: string;
  readonly out: number;
  readonly in: number;
}

/** The modules of `config` that `spec` adapts, in checkpoint order (e.g. `model.layers.0.self_attn.q_proj`). */
export function loraModules(config: ModelConfig, spec: LoraSpec): LoraModule[] {
  if (!Number.isInteger(spec.rank) || spec.rank < 1)
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `LoRA rank must be a positive integer, got ${spec.rank}`,
    );
  const targets = new Set<string>(spec.targetModules);
  const out: LoraModule[] = [];
  for (const [name, shape] of paramShapes(config)) {
    const m = /^(model\.layers\.\d+\.(?:self_attn|mlp)\.([a-z_]+))\.weight$/.exec(name);
    if (m && targets.has(m[2]!)) out.push({ module: m[1]!, out: shape[0]!, in: shape[1]! });
  }
  return out;
}

/** Names of a module's adapter tensors in a model's parameters. */
export const loraAName = (module: string) => `${module}.lora_A.weight`;
export const loraBName = (module: string) => `${module}.lora_B.weight`;

/** True for a parameter name that belongs to a LoRA adapter. */
export const isLoraParam = (name: string) => /\.lora_[AB]\.weight$/.test(name);

/**
 * The parameters `modulesToSave` names, in checkpoint order: those whose module (the name
 * without `.weight` / `.bias`) ends with one of them, as PEFT's `_set_trainable` matches (`norm`
 * is every RMSNorm: `input_layernorm`, `q_norm`, `model.norm`, ...). Adapters never match; each
 * entry must match at least one parameter.
 */
export function savedModuleParams(
  names: Iterable<string>,
  modulesToSave: readonly string[],
): string[] {
  const all = [...names].filter((n) => !isLoraParam(n));
  const moduleOf = (n: string) => n.replace(/\.(weight|bias)$/, '');
  const hits = (n: string, m: string) => moduleOf(n).endsWith(m);
  for (const m of modulesToSave)
    if (!all.some((n) => hits(n, m)))
      throw new ModelsError(
        'INVALID_ARGUMENT',
        `LoRA modules_to_save "${m}" names no module of this model (e.g. embed_tokens, lm_head, norm, input_layernorm)`,
      );
  return all.filter((n) => modulesToSave.some((m) => hits(n, m)));
}

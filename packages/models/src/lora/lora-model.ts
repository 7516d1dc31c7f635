import * as tf from '@tensorflow/tfjs-core';
import { createDecoderModel, type DecoderModel } from '../model/decoder-model.js';
import type { ParamMap } from '../model/param-map.js';
import { ModelsError } from '../errors.js';
import { type LoraDropout, loraLinear } from './lora-linear.js';
import { variableOf } from './lora-params.js';
import {
  isLoraParam,
  type LoraSpec,
  loraModules,
  loraAName,
  loraBName,
  loraScale,
  savedModuleParams,
} from './lora-spec.js';

/** A decoder with LoRA adapters: the model to train, its base alone, and the adapters. */
export interface LoraModel {
  /** Base parameters (frozen: `trainable` false) and adapters together; its linears add s * B A x. */
  readonly model: DecoderModel;
  /** The same base parameters without the adapters (e.g. DPO's reference): no second copy of the weights. */
  readonly base: DecoderModel;
  /**
   * The adapter tensors by name (`<module>.lora_A.weight`, `<module>.lora_B.weight`), then the
   * trained copies of `spec.modulesToSave`'s parameters (by their own names, e.g. `model.norm.weight`).
   */
  readonly adapters: ParamMap;
  readonly spec: LoraSpec;
  /** Set per micro-batch by a trainer when `spec.dropout` > 0 (see {@link LoraDropout}). */
  readonly dropout?: LoraDropout;
}

/** A tensor's shape on this rank from its full shape, by parameter name (identity on one process). */
export type LocalShape = (name: string, full: readonly number[]) => readonly number[];

/** A frozen parameter: a variable marked not trainable (a LoRA base weight). */
export function isFrozen(t: tf.Tensor | undefined): boolean {
  return t instanceof tf.Variable && !t.trainable;
}

/**
 * Puts `adapters` (see `initLoraParams`, or read from a PEFT file) on `base`: the base's
 * variables (but a value model's `score.*` head) are frozen (no gradients, no optimizer state for them; `trainable` set false) and
 * its linear layers wrapped by `loraLinear`. Every adapter `spec` implies must be present with
 * its shape; extra ones are refused. `spec.modulesToSave`'s parameters train as copies (PEFT's
 * `ModulesToSaveWrapper`): `model` reads the copies, `base` keeps the originals; a copy's
 * starting value is `saved`'s tensor of that name when given (a resumed adapter), else the base's.
 * A base laid out in parts (tensor parallelism) takes adapters and `saved` laid out alike:
 * `localShape` gives a tensor's shape on this rank from its full one.
 */
export function attachLora(
  base: DecoderModel,
  adapters: ParamMap,
  spec: LoraSpec,
  saved: ReadonlyMap<string, tf.Tensor> = new Map(),
  localShape: LocalShape = (_, shape) => shape,
): LoraModel {
  // in module order whatever order they came in (a file's is sorted): the gradients and the
  // optimizer then see the same order as a fresh run, so sums over them agree to the last bit
  const ordered: ParamMap = new Map(
    checkAdapters(base, adapters, spec, localShape).map((n) => [n, adapters.get(n)!]),
  );
  // a value head is new (PEFT's modules_to_save=["score"]): it trains with the adapters
  const trains = (name: string) => base.config.head === 'value' && name.startsWith('score.');
  for (const [name, v] of base.params) if (!isLoraParam(name)) v.trainable = trains(name);
  const copies = savedCopies(base, spec, saved);
  const dropout: LoraDropout | undefined = spec.dropout > 0 ? { rate: spec.dropout } : undefined;
  const params: ParamMap = new Map([...base.params, ...ordered, ...copies]);
  const model = createDecoderModel(base.config, params, {
    ...hooksOf(base),
    linear: loraLinear(base.linear, loraScale(spec), dropout),
  });
  const trained: ParamMap = new Map([...ordered, ...copies]);
  return { model, base, adapters: trained, spec, ...(dropout ? { dropout } : {}) };
}

/** Trainable copies of the parameters `spec.modulesToSave` names (from `saved` when there, checked for shape). */
function savedCopies(
  base: DecoderModel,
  spec: LoraSpec,
  saved: ReadonlyMap<string, tf.Tensor>,
): ParamMap {
  const copies: ParamMap = new Map();
  if (!spec.modulesToSave?.length) return copies;
  if (base.frozen && base.frozen.size > 0)
    throw new ModelsError(
      'INVALID_ARGUMENT',
      'LoRA modules_to_save trains float32 copies; load the base in float32 (lora.base_dtype=float32)',
    );
  for (const name of savedModuleParams(base.params.keys(), spec.modulesToSave)) {
    const from = saved.get(name) ?? base.params.get(name)!;
    const want = base.params.get(name)!.shape;
    if (from.shape.join(',') !== want.join(','))
      throw new ModelsError(
        'SHAPE_MISMATCH',
        `LoRA modules_to_save "${name}" has shape [${from.shape}], the base's is [${want}]`,
      );
    // a copy of the values, not of the buffer: the optimizer may update a variable in place
    copies.set(name, variableOf(tf.tensor(from.dataSync(), from.shape, 'float32')));
  }
  const extra = [...saved.keys()].filter((n) => !copies.has(n));
  if (extra.length > 0)
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `saved modules outside LoRA modules_to_save [${spec.modulesToSave}]: ${extra.slice(0, 3).join(', ')}`,
    );
  return copies;
}

function hooksOf(m: DecoderModel) {
  return {
    linear: m.linear,
    attention: m.attention,
    ...(m.embedding ? { embedding: m.embedding } : {}),
    ...(m.logprobHead ? { logprobHead: m.logprobHead } : {}),
    ...(m.splitRow ? { splitRow: m.splitRow } : {}),
    ...(m.frozen ? { frozen: m.frozen } : {}),
  };
}

/** The adapters' names in module order, after checking each is there with its shape. */
function checkAdapters(
  base: DecoderModel,
  adapters: ParamMap,
  spec: LoraSpec,
  localShape: LocalShape,
): string[] {
  const expected = new Map<string, readonly number[]>();
  for (const m of loraModules(base.config, spec)) {
    const [a, b] = [loraAName(m.module), loraBName(m.module)];
    expected.set(a, localShape(a, [spec.rank, m.in]));
    expected.set(b, localShape(b, [m.out, spec.rank]));
  }
  for (const [name, shape] of expected) {
    const t = adapters.get(name);
    if (!t)
      throw new ModelsError(
        'CHECKPOINT_ERROR',
        `LoRA adapter "${name}" is missing (rank ${spec.rank}, target_modules ${spec.targetModules.join(',')})`,
      );
    if (t.shape.join(',') !== shape.join(','))
      throw new ModelsError(
        'SHAPE_MISMATCH',
        `LoRA adapter "${name}" has shape [${t.shape}], rank ${spec.rank} on this model implies [${shape}]`,
      );
  }
  const extra = [...adapters.keys()].filter((n) => !expected.has(n));
  if (extra.length > 0)
    throw new ModelsError(
      'CHECKPOINT_ERROR',
      `LoRA adapters for modules outside target_modules ${spec.targetModules.join(',')}: ${extra.slice(0, 3).join(', ')}`,
    );
  return [...expected.keys()];
}

/**
 * The merged weights W + s * B A of every adapted module, the other base parameters as they
 * are (the same tensors): a plain checkpoint whose logits equal base + adapter's. `dispose`
 * frees the merged tensors only.
 */
export function mergeLora(lora: LoraModel): { params: ParamMap; dispose(): void } {
  if (lora.base.frozen)
    throw new ModelsError(
      'INVALID_ARGUMENT',
      'mergeLora: the base is kept in 16 bits (lora.base_dtype=bfloat16); merge from a float32 base ' +
        '(lora.base_dtype=float32) or with `rl2 export --merge`',
    );
  const scale = loraScale(lora.spec);
  const merged: tf.Tensor[] = [];
  const params = new Map(lora.base.params) as Map<string, tf.Variable | tf.Tensor>;
  for (const [name, t] of lora.adapters) if (!isLoraParam(name)) params.set(name, t);
  for (const m of loraModules(lora.base.config, lora.spec)) {
    const w = lora.base.params.get(`${m.module}.weight`)!;
    const a = lora.adapters.get(loraAName(m.module))!;
    const b = lora.adapters.get(loraBName(m.module))!;
    const t = tf.tidy(() => tf.add(w, tf.mul(tf.matMul(b, a), scale)));
    merged.push(t);
    params.set(`${m.module}.weight`, t);
  }
  return { params: params as ParamMap, dispose: () => tf.dispose(merged) };
}

import { type DecodeMatrix, decodeKernels, type WeightDtype, writeCount } from '@rl2/engine';
import type * as tf from '@tensorflow/tfjs-core';
import { ModelsError } from '../errors.js';
import { floatToBf16Bits, floatToHalfBits } from '../checkpoint/float-formats.js';
import { checkpointDtype } from '../checkpoint/save-model.js';
import type { DecoderModel } from '../model/decoder-model.js';

/** The weight dtypes generation takes (`rl2 serve --dtype`, `rollout.weight_dtype`). */
export const GENERATION_WEIGHT_DTYPES: readonly WeightDtype[] = ['float32', 'bfloat16', 'float16'];

/** `value` as a generation weight dtype, or an error naming `key` and the allowed values. */
export function parseWeightDtype(value: string, key: string): WeightDtype {
  if ((GENERATION_WEIGHT_DTYPES as readonly string[]).includes(value)) return value as WeightDtype;
  throw new ModelsError(
    'INVALID_ARGUMENT',
    `${key} "${value}" is not a generation weight dtype; use one of ${GENERATION_WEIGHT_DTYPES.join(', ')}`,
  );
}

/** The default generation weight dtype of a model: bfloat16 when its checkpoint is, else float32. */
export function defaultWeightDtype(model: DecoderModel): WeightDtype {
  return checkpointDtype(model.config.raw) === 'bfloat16' ? 'bfloat16' : 'float32';
}

// 16-bit copies by tensor data and dtype: a weight load assigns new data (a new dataId), so a
// copy is made once per tensor and dropped with it; an in-place optimizer step keeps the
// dataId and counts a write (`writeCount`), after which the copy is remade over its own array.
const copies = new WeakMap<
  object,
  Partial<Record<WeightDtype, { bits: Uint16Array; writes: number }>>
>();
let copiesMade = { native: 0, js: 0, elements: 0 };

/** 16-bit copies made so far in this process: by the native kernel, by the JS loop, and their elements. */
export function halfCopiesMade(): { native: number; js: number; elements: number } {
  return { ...copiesMade };
}

/** float32 values rounded to nearest even as bfloat16 or float16 bits. */
export function toHalfBits(values: Float32Array, dtype: 'bfloat16' | 'float16'): Uint16Array {
  const u32 = new Uint32Array(values.buffer, values.byteOffset, values.length);
  const out = new Uint16Array(values.length);
  const round = dtype === 'bfloat16' ? floatToBf16Bits : floatToHalfBits;
  for (let i = 0; i < u32.length; i++) out[i] = round(u32[i]!);
  return out;
}

/** `values` as `dtype` bits into `out`: the native kernel on every thread where loaded, else JS. */
function roundInto(values: Float32Array, dtype: 'bfloat16' | 'float16', out: Uint16Array): void {
  const kernels = decodeKernels();
  copiesMade = {
    native: copiesMade.native + (kernels ? 1 : 0),
    js: copiesMade.js + (kernels ? 0 : 1),
    elements: copiesMade.elements + values.length,
  };
  if (kernels) kernels.halfBits(values, dtype, out);
  else out.set(toHalfBits(values, dtype));
}

/**
 * A float32 parameter as a decode matrix of `dtype`: its own storage for float32, else its
 * 16-bit bits (made on first use, remade when its values change, then reused).
 */
export function decodeMatrix(t: tf.Tensor, dtype: WeightDtype): DecodeMatrix | undefined {
  const v = t.dataSync();
  if (!(v instanceof Float32Array)) return undefined;
  if (dtype === 'float32') return v;
  const key = (t as unknown as { dataId: object }).dataId;
  const writes = writeCount(t as unknown as { dataId: object });
  const byDtype = copies.get(key) ?? {};
  const hit = byDtype[dtype];
  if (hit && hit.writes === writes) return hit.bits;
  const bits = hit?.bits.length === v.length ? hit.bits : new Uint16Array(v.length);
  roundInto(v, dtype, bits);
  byDtype[dtype] = { bits, writes };
  copies.set(key, byDtype);
  return bits;
}

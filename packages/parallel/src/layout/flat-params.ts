import * as tf from '@tensorflow/tfjs-core';
import { ParallelError } from '../errors.js';
import { valuesOf } from './custom-grad.js';

/**
 * A named parameter map laid end to end in one flat float32 buffer, padded to a multiple of
 * the fsdp size so that it splits into equal shards (FSDP's FlatParameter,
 * https://arxiv.org/abs/2304.11277 §3.2). Rank r of the fsdp group owns
 * `[r * shardSize, (r + 1) * shardSize)`.
 */
export interface FlatParamLayout {
  names: string[];
  shapes: number[][];
  /** Start of each parameter in the flat buffer. */
  offsets: number[];
  /** Parameters' total element count, before padding. */
  numel: number;
  /** numel rounded up to fsdpSize * shardSize. */
  paddedNumel: number;
  shardSize: number;
  fsdpSize: number;
}

/** Lay out parameters (in the map's order) for an fsdp group of `fsdpSize` ranks. */
export function planFlatParams(
  shapes: Record<string, readonly number[]>,
  fsdpSize: number,
): FlatParamLayout {
  if (!Number.isInteger(fsdpSize) || fsdpSize < 1)
    throw new ParallelError('INVALID_ARGUMENT', `fsdpSize=${fsdpSize} must be a positive integer.`);
  const names = Object.keys(shapes);
  const offsets: number[] = [];
  let numel = 0;
  for (const n of names) {
    offsets.push(numel);
    numel += shapes[n]!.reduce((a, b) => a * b, 1);
  }
  const shardSize = Math.ceil(numel / fsdpSize);
  return {
    names,
    shapes: names.map((n) => [...shapes[n]!]),
    offsets,
    numel,
    paddedNumel: shardSize * fsdpSize,
    shardSize,
    fsdpSize,
  };
}

/**
 * FSDP units of named tensors: `unitOf(name)` groups them (e.g. one unit per decoder layer),
 * units in the order their first tensor appears, each laid out flat for `fsdpSize` ranks.
 */
export function planUnits(
  tensors: Record<string, { shape: readonly number[] }>,
  unitOf: (name: string) => string,
  fsdpSize: number,
): { name: string; layout: FlatParamLayout }[] {
  const byUnit = new Map<string, Record<string, readonly number[]>>();
  for (const [name, t] of Object.entries(tensors)) {
    const u = unitOf(name);
    const shapes = byUnit.get(u) ?? {};
    shapes[name] = t.shape;
    byUnit.set(u, shapes);
  }
  return [...byUnit].map(([name, shapes]) => ({ name, layout: planFlatParams(shapes, fsdpSize) }));
}

/** Copy tensors into a padded flat buffer; a missing or misshapen tensor names the parameter. */
export function flattenParams(
  tensors: Record<string, tf.Tensor>,
  layout: FlatParamLayout,
): Float32Array {
  const flat = new Float32Array(layout.paddedNumel);
  layout.names.forEach((n, i) => {
    const t = tensors[n];
    if (!t)
      throw new ParallelError(
        'LAYOUT',
        `parameter "${n}" is missing from the map (expected shape [${layout.shapes[i]!.join(', ')}]).`,
      );
    if (t.shape.join(',') !== layout.shapes[i]!.join(',')) {
      throw new ParallelError(
        'LAYOUT',
        `parameter "${n}" has shape [${t.shape.join(', ')}] but the layout expects [${layout.shapes[i]!.join(', ')}].`,
      );
    }
    flat.set(valuesOf(t), layout.offsets[i]);
  });
  return flat;
}

/** Tensors viewed from a flat buffer (the padding is ignored). */
export function unflattenParams(
  flat: Float32Array,
  layout: FlatParamLayout,
): Record<string, tf.Tensor> {
  const out: Record<string, tf.Tensor> = {};
  layout.names.forEach((n, i) => {
    const size = layout.shapes[i]!.reduce((a, b) => a * b, 1);
    out[n] = tf.tensor(
      flat.subarray(layout.offsets[i], layout.offsets[i]! + size),
      layout.shapes[i],
    );
  });
  return out;
}

/** This fsdp rank's shard of a padded flat buffer (a copy). */
export function shardOf(
  flat: Float32Array,
  layout: FlatParamLayout,
  fsdpRank: number,
): Float32Array {
  if (fsdpRank < 0 || fsdpRank >= layout.fsdpSize)
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `fsdp rank ${fsdpRank} is outside the group of ${layout.fsdpSize}.`,
    );
  return flat.slice(fsdpRank * layout.shardSize, (fsdpRank + 1) * layout.shardSize);
}

/**
 * Sum of squares of this fsdp rank's shard of a flat buffer (e.g. its gradient shard), each
 * parameter's part weighted by `weightOf(name)` (the padding is not counted).
 */
export function shardSquares(
  shard: ArrayLike<number>,
  layout: FlatParamLayout,
  fsdpRank: number,
  weightOf: (name: string) => number = () => 1,
): number {
  const start = fsdpRank * layout.shardSize;
  let sq = 0;
  layout.names.forEach((name, k) => {
    const at = layout.offsets[k]!;
    const size = layout.shapes[k]!.reduce((a, b) => a * b, 1);
    const a = Math.max(at, start) - start;
    const b = Math.min(at + size, start + layout.shardSize) - start;
    let part = 0;
    for (let i = a; i < b; i++) part += shard[i]! * shard[i]!;
    sq += weightOf(name) * part;
  });
  return sq;
}

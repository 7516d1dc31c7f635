import { ModelsError } from '../errors.js';
import { elementCount, type TensorSpec } from './safetensors-header.js';

/** `save_pretrained`'s default `max_shard_size`. */
export const DEFAULT_MAX_SHARD_SIZE = '5GB';

const UNITS: Record<string, number> = {
  B: 1,
  KB: 1e3,
  MB: 1e6,
  GB: 1e9,
  TB: 1e12,
  KIB: 2 ** 10,
  MIB: 2 ** 20,
  GIB: 2 ** 30,
  TIB: 2 ** 40,
};

/**
 * Bytes of a `max_shard_size` as transformers reads it: a number of bytes, or a number with a
 * unit, decimal (`5GB` = 5e9, `500MB`) or binary (`2GiB` = 2^31). `key` names the setting in errors.
 */
export function parseShardSize(value: number | string, key = 'max_shard_size'): number {
  const m = typeof value === 'number' ? null : /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value);
  const bytes =
    typeof value === 'number'
      ? value
      : m
        ? Number(m[1]) * (UNITS[(m[2] || 'B').toUpperCase()] ?? Number.NaN)
        : Number.NaN;
  if (!Number.isFinite(bytes) || bytes < 1) {
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `${key}=${value} is not a size; use bytes or a number with a unit, e.g. 5GB, 500MB, 2GiB`,
    );
  }
  return Math.floor(bytes);
}

/** Which tensors go to which file of a checkpoint. */
export interface ShardPlan {
  /** `model.safetensors`, or `model-0000i-of-0000n.safetensors` with the tensors of each. */
  readonly files: { readonly file: string; readonly specs: TensorSpec[] }[];
  /** Tensor name -> file (the index's `weight_map`); empty for a single file. */
  readonly weightMap: Record<string, string>;
  /** Bytes of all tensors (the index's `metadata.total_size`). */
  readonly totalSize: number;
}

/**
 * Splits tensors (in model order) into shards of at most `maxShardBytes`, as huggingface_hub's
 * `split_state_dict_into_shards_factory`: a tensor that would tip the current shard over the
 * limit starts a new one, a tensor larger than the limit gets a shard of its own.
 */
export function planShards(
  specs: readonly TensorSpec[],
  bytesPerElement: number,
  maxShardBytes: number,
): ShardPlan {
  const shards: TensorSpec[][] = [];
  let current: TensorSpec[] = [];
  let currentSize = 0;
  let totalSize = 0;
  for (const spec of specs) {
    const size = elementCount(spec.shape) * bytesPerElement;
    totalSize += size;
    if (size > maxShardBytes) {
      shards.push([spec]);
      continue;
    }
    if (currentSize + size > maxShardBytes) {
      shards.push(current);
      current = [];
      currentSize = 0;
    }
    current.push(spec);
    currentSize += size;
  }
  if (current.length > 0 || shards.length === 0) shards.push(current);
  const kept = shards.filter((s) => s.length > 0 || shards.length === 1);
  if (kept.length === 1)
    return {
      files: [{ file: 'model.safetensors', specs: kept[0] as TensorSpec[] }],
      weightMap: {},
      totalSize,
    };
  const n = String(kept.length).padStart(5, '0');
  const files = kept.map((s, i) => ({
    file: `model-${String(i + 1).padStart(5, '0')}-of-${n}.safetensors`,
    specs: s,
  }));
  const weightMap: Record<string, string> = {};
  for (const f of files) for (const s of f.specs) weightMap[s.name] = f.file;
  return { files, weightMap, totalSize };
}

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GenerationConfig } from '../config/generation-config.js';
import { ModelsError } from '../errors.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { paramsToHost } from '../model/param-map.js';
import { type HostTensor, type SaveDtype, serializeSafetensors } from './safetensors.js';

/** Options of `saveCheckpoint`. */
export interface SaveCheckpointOptions {
  /** `float32` (default) or `bfloat16`; config.json's torch_dtype says which. */
  dtype?: 'float32' | 'bfloat16';
  /** Split into shards of at most this many bytes with model.safetensors.index.json (default 5 GB, as HF). */
  maxShardBytes?: number;
  generationConfig?: GenerationConfig;
}

/**
 * Writes a Hugging Face checkpoint folder `transformers` loads: config.json (the original keys
 * plus torch_dtype), generation_config.json when given, and model.safetensors or
 * model-0000i-of-0000n.safetensors + model.safetensors.index.json. Returns the files written.
 */
export async function saveCheckpoint(dir: string, model: DecoderModel, options: SaveCheckpointOptions = {}): Promise<string[]> {
  const dtype: SaveDtype = options.dtype === 'bfloat16' ? 'BF16' : 'F32';
  if (options.dtype && options.dtype !== 'float32' && options.dtype !== 'bfloat16') {
    throw new ModelsError('INVALID_ARGUMENT', `saveCheckpoint: dtype "${options.dtype}" (use "float32" or "bfloat16")`);
  }
  const bytesPer = dtype === 'F32' ? 4 : 2;
  const maxShard = options.maxShardBytes ?? 5e9;
  await mkdir(dir, { recursive: true });
  const host = await paramsToHost(model.params);
  const config = { ...model.config.raw, torch_dtype: options.dtype ?? 'float32' };
  const written = [join(dir, 'config.json')];
  await writeFile(written[0]!, `${JSON.stringify(config, null, 2)}\n`);
  if (options.generationConfig) {
    written.push(join(dir, 'generation_config.json'));
    await writeFile(written.at(-1)!, `${JSON.stringify(options.generationConfig.raw, null, 2)}\n`);
  }
  const shards: Map<string, HostTensor>[] = [new Map()];
  let size = 0;
  let total = 0;
  for (const name of [...host.keys()].sort()) {
    const t = host.get(name)!;
    const bytes = t.data.length * bytesPer;
    if (size > 0 && size + bytes > maxShard) {
      shards.push(new Map());
      size = 0;
    }
    shards.at(-1)!.set(name, t);
    size += bytes;
    total += bytes;
  }
  if (shards.length === 1) {
    written.push(join(dir, 'model.safetensors'));
    await writeFile(written.at(-1)!, serializeSafetensors(shards[0]!, dtype));
    return written;
  }
  const weightMap: Record<string, string> = {};
  for (let i = 0; i < shards.length; i++) {
    const file = `model-${String(i + 1).padStart(5, '0')}-of-${String(shards.length).padStart(5, '0')}.safetensors`;
    for (const name of shards[i]!.keys()) weightMap[name] = file;
    written.push(join(dir, file));
    await writeFile(written.at(-1)!, serializeSafetensors(shards[i]!, dtype));
  }
  written.push(join(dir, 'model.safetensors.index.json'));
  await writeFile(written.at(-1)!, `${JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2)}\n`);
  return written;
}

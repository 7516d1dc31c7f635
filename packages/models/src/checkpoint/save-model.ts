import { readsSynchronously } from '@rl2/engine';
import type { GenerationConfig } from '../config/generation-config.js';
import { ModelsError } from '../errors.js';
import type { DecoderModel } from '../model/decoder-model.js';
import { type CheckpointFormat, CheckpointWriter } from './checkpoint-writer.js';
import { TORCH_DTYPES, type TorchDtype } from './float-formats.js';

/** Options of `saveModel`. */
export interface SaveModelOptions extends CheckpointFormat {
  generationConfig?: GenerationConfig;
  /** Adds files to the checkpoint (e.g. the tokenizer) in its work folder, before it is swapped in. */
  addFiles?: (workDir: string) => void;
}

/** The weights' dtype a config.json declares (`torch_dtype`, or `dtype` in newer transformers); float32 when none. */
export function checkpointDtype(raw: Record<string, unknown>): TorchDtype {
  const declared = raw.torch_dtype ?? raw.dtype;
  return typeof declared === 'string' && declared in TORCH_DTYPES
    ? (declared as TorchDtype)
    : 'float32';
}

/**
 * Writes a Hugging Face checkpoint folder `transformers` loads: config.json (the original keys,
 * torch_dtype set to the saved dtype), generation_config.json when given, and model.safetensors
 * or model-0000i-of-0000n.safetensors + model.safetensors.index.json. `dtype` defaults to the
 * config's torch_dtype, `maxShardSize` to 5GB. Streams tensor by tensor and replaces `dir`
 * atomically (see `CheckpointWriter`). Returns the files written.
 */
export async function saveModel(
  dir: string,
  model: DecoderModel,
  options: SaveModelOptions = {},
): Promise<string[]> {
  const dtype = options.dtype ?? checkpointDtype(model.config.raw);
  if (!(dtype in TORCH_DTYPES)) {
    throw new ModelsError(
      'INVALID_ARGUMENT',
      `saveModel: dtype "${dtype}" (use ${Object.keys(TORCH_DTYPES).join(', ')})`,
    );
  }
  const specs = [...model.params].map(([name, p]) => ({ name, shape: p.shape }));
  const writer = CheckpointWriter.open(dir, specs, { dtype, maxShardSize: options.maxShardSize });
  try {
    const raw = model.config.raw;
    writer.writeJson('config.json', {
      ...raw,
      torch_dtype: dtype,
      ...('dtype' in raw ? { dtype } : {}),
    });
    if (options.generationConfig)
      writer.writeJson('generation_config.json', options.generationConfig.raw);
    // one tensor at a time: on the cpu/native backends dataSync is the variable's own array (no
    // copy); a GPU backend copies each tensor back in turn (an asynchronous read)
    for (const [name, p] of model.params)
      writer.write(name, (readsSynchronously() ? p.dataSync() : await p.data()) as Float32Array);
    options.addFiles?.(writer.workDir);
  } catch (e) {
    writer.abort();
    throw e;
  }
  return writer.commit();
}

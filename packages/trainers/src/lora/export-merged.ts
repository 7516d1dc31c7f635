import {
  type TorchDtype,
  attachLora,
  createDecoderModel,
  disposeParams,
  isLoraParam,
  loadModel,
  loraParamsFromHost,
  mergeLora,
  readPeftAdapter,
  resolveModelDir,
  saveModel,
} from '@rl2/models';
import * as tf from '@tensorflow/tfjs-core';
import { TrainersError } from '../errors.js';
import { copyTokenizerFiles } from '../model-init/tokenizer-files.js';

/** What `rl2 export --merge` reads and writes. */
export interface ExportMergedOptions {
  /** A PEFT LoRA adapter folder (a LoRA checkpoint's `adapter/`). */
  readonly adapter: string;
  /** The merged Hugging Face folder to write. */
  readonly out: string;
  /** The base model (default: the adapter's `base_model_name_or_path`). */
  readonly model?: string;
  /** Saved weights' dtype (default: the base's torch_dtype). */
  readonly dtype?: TorchDtype;
}

/**
 * Writes base + adapter as one plain Hugging Face model, W + s B A in every adapted projection
 * (and a value model's trained score head), with the base's tokenizer files: what
 * `actor.lora.save_merged=true` writes into a checkpoint, for an adapter saved without it.
 */
export async function exportMerged(options: ExportMergedOptions): Promise<string> {
  const saved = (() => {
    try {
      return readPeftAdapter(options.adapter);
    } catch (err) {
      throw new TrainersError(
        'CHECKPOINT',
        `--adapter ${options.adapter}: ${(err as Error).message}`,
      );
    }
  })();
  const baseName = options.model ?? saved.config.base_model_name_or_path;
  if (!baseName)
    throw new TrainersError(
      'CHECKPOINT',
      `--adapter ${options.adapter}: adapter_config.json names no base_model_name_or_path; give --model BASE`,
    );
  const head = saved.config.task_type === 'TOKEN_CLS' ? 'value' : 'causal-lm';
  const { model, generationConfig } = await loadModel(baseName, { head }).catch((err: Error) => {
    throw new TrainersError(
      'CHECKPOINT',
      `${options.model ? '--model' : 'base_model_name_or_path'} ${baseName}: ${err.message}`,
    );
  });
  for (const [name, t] of saved.tensors) {
    const p = isLoraParam(name) ? undefined : model.params.get(name);
    if (p) tf.tidy(() => p.assign(tf.tensor(t.data, t.shape)));
  }
  const adapters = loraParamsFromHost(new Map([...saved.tensors].filter(([n]) => isLoraParam(n))));
  try {
    const lora = attachLora(model, adapters, saved.spec);
    const merged = mergeLora(lora);
    const from = await resolveModelDir(baseName, { tokenizerOnly: true });
    try {
      await saveModel(options.out, createDecoderModel(model.config, merged.params), {
        ...(generationConfig ? { generationConfig } : {}),
        ...(options.dtype ? { dtype: options.dtype } : {}),
        addFiles: (dir) => copyTokenizerFiles(from, dir),
      });
    } finally {
      merged.dispose();
    }
  } catch (err) {
    if (err instanceof TrainersError) throw err;
    throw new TrainersError(
      'CHECKPOINT',
      `--adapter ${options.adapter} on ${baseName}: ${(err as Error).message}`,
    );
  } finally {
    disposeParams(adapters);
    disposeParams(model.params);
  }
  return options.out;
}

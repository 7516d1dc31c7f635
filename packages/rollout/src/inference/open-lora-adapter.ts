import {
  type DecoderModel,
  type LoraModel,
  attachTensorParallelLora,
  disposeParams,
  isLoraParam,
  loraParamsFromHost,
  readPeftAdapter,
} from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { RolloutError } from '../errors.js';

/**
 * The PEFT LoRA adapter folder `path` on `base` (`rl2 serve --lora`): its LoRA matrices and its
 * modules_to_save copies (e.g. the embedding, the norms: the adapter's own, not the base's).
 * With `tp`, `base` is this rank's tensor-parallel shards and the adapter is split alike
 * (`attachTensorParallelLora`). Errors name the folder.
 */
export function openLoraAdapter(base: DecoderModel, path: string, tp?: ProcessGroup): LoraModel {
  let saved: ReturnType<typeof readPeftAdapter>;
  try {
    saved = readPeftAdapter(path);
  } catch (err) {
    throw new RolloutError('INVALID_ARGUMENT', (err as Error).message);
  }
  const params = loraParamsFromHost(new Map([...saved.tensors].filter(([n]) => isLoraParam(n))));
  const modules = loraParamsFromHost(new Map([...saved.tensors].filter(([n]) => !isLoraParam(n))));
  try {
    return attachTensorParallelLora(base, params, saved.spec, modules, tp);
  } catch (err) {
    throw new RolloutError('INVALID_ARGUMENT', `${path}: ${(err as Error).message}`);
  } finally {
    disposeParams(modules);
  }
}

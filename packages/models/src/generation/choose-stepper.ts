import { readsSynchronously, type WeightDtype } from '@rl2/engine';
import type { DecoderModel } from '../model/decoder-model.js';
import { type BatchStepper, localStepper } from './batch-stepper.js';
import { deviceStepper } from './device-stepper.js';
import type { KvCacheLayout } from './kv-decoder.js';

/**
 * The generator's default stepper: on a device backend (webgpu: no synchronous reads)
 * `deviceStepper` (KV cache and sampling on the device, token ids read back once per step),
 * else `localStepper` (the fused native decoder or the tfjs one, sampling on the host). Chosen
 * whenever the batch is empty, so a backend set after `createGenerator` is used.
 */
export function backendStepper(
  model: DecoderModel,
  fused = true,
  weightDtype?: WeightDtype,
  kvCache?: KvCacheLayout,
): BatchStepper {
  let host: BatchStepper | undefined;
  let device: BatchStepper | undefined;
  let current: BatchStepper | undefined;
  const choose = (): BatchStepper => {
    if (readsSynchronously()) {
      host ??= localStepper(model, fused, weightDtype, kvCache);
      return host;
    }
    device ??= deviceStepper(model);
    return device;
  };
  return {
    prefill(tokens, positions, pad, rows, room) {
      current ??= choose();
      return current.prefill(tokens, positions, pad, rows, room);
    },
    step: (tokens, positions, rows) => current!.step(tokens, positions, rows),
    select(keep) {
      current?.select(keep);
      if (keep.length === 0) current = undefined;
    },
    reset() {
      current?.reset();
      current = undefined;
    },
  };
}

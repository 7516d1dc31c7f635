import { followTensorParallel } from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { RolloutError } from '../errors.js';
import {
  LOAD_LORA,
  RELOAD,
  STOP,
  UNLOAD_LORA,
  loadAgreed,
  receiveCommand,
} from './tensor-parallel-commands.js';
import {
  type RankWeights,
  freeRankWeights,
  loadRankAdapter,
  modelOfSlot,
  reloadRankBase,
  unloadRankAdapter,
} from './tensor-parallel-weights.js';

/**
 * A follower of `loadTensorParallelEngine` (tp group ranks 1..N-1 of `rl2 serve --tp N`): loads
 * its shards of `modelPath`, runs the forwards the lead's generators broadcast (the base's and
 * each LoRA adapter's), loads other shards or adapters when the lead does, and returns when the
 * lead stops. Throws when the lead is lost (the collectives fail: PEER_LOST, or the collective
 * timeout without even a heartbeat).
 */
export async function followTensorParallelEngine(
  modelPath: string,
  tp: ProcessGroup,
  log: (line: string) => void,
): Promise<void> {
  const weights: RankWeights = { base: await loadAgreed(modelPath, tp, log), adapters: new Map() };
  for (;;) {
    await followTensorParallel((slot) => modelOfSlot(weights, slot), tp);
    const { op, text } = receiveCommand(tp);
    if (op === STOP) break;
    if (op !== RELOAD && op !== LOAD_LORA && op !== UNLOAD_LORA)
      throw new RolloutError(
        'ENGINE_FAILED',
        `tp rank ${tp.rank}: unknown command ${op} from the lead; are every rank's rl2 versions the same?`,
      );
    try {
      if (op === RELOAD) await reloadRankBase(weights, text, tp, log);
      else if (op === LOAD_LORA) {
        const { name, path, slot } = JSON.parse(text) as {
          name: string;
          path: string;
          slot: number;
        };
        await loadRankAdapter(weights, name, path, slot, tp, log);
      } else unloadRankAdapter(weights, text);
    } catch (e) {
      // a failed load: every rank keeps what it served and the lead reports why
      if (!(e instanceof RolloutError)) throw e;
    }
  }
  freeRankWeights(weights);
}

import { disposeParams, followTensorParallel } from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { RolloutError } from '../errors.js';
import { RELOAD, STOP, loadAgreed, receiveCommand } from './tensor-parallel-commands.js';

/**
 * A follower of `loadTensorParallelEngine` (tp group ranks 1..N-1 of `rl2 serve --tp N`): loads
 * its shards of `modelPath`, runs the forwards the lead's generator broadcasts, loads other
 * shards when the lead reloads weights, and returns when the lead stops. Throws when the lead is
 * lost (the collectives fail: PEER_LOST, or the collective timeout without even a heartbeat).
 */
export async function followTensorParallelEngine(
  modelPath: string,
  tp: ProcessGroup,
  log: (line: string) => void,
): Promise<void> {
  let { loaded } = await loadAgreed(modelPath, tp, log);
  for (;;) {
    await followTensorParallel(loaded.model, tp);
    const { op, text } = receiveCommand(tp);
    if (op === STOP) break;
    if (op !== RELOAD)
      throw new RolloutError(
        'ENGINE_FAILED',
        `tp rank ${tp.rank}: unknown command ${op} from the lead; are every rank's rl2 versions the same?`,
      );
    try {
      const next = await loadAgreed(text, tp, log);
      disposeParams(loaded.model.params);
      loaded = next.loaded;
    } catch (e) {
      // a failed load: every rank keeps the old weights and the lead reports why
      if (!(e instanceof RolloutError)) throw e;
    }
  }
  disposeParams(loaded.model.params);
}

import type { RolloutEngine, SGLangEngine } from '@rl2/rollout';
import { TrainersError } from '../errors.js';

/**
 * rl2 ppo's weight sync with a LoRA actor and rollout.engine=sglang: the adapter alone (a few MB
 * instead of the model) is written to `dir` and loaded on every server under a new name
 * (`actor-1`, `actor-2`, ...), which the client then generates with; the previous one is
 * unloaded. SGLang needs the server started with --enable-lora (or --lora-paths), as rl2 serve.
 */
export function sglangAdapterSync(
  write: (dir: string, isMain: boolean) => Promise<void>,
  dir: string,
) {
  let version = 0;
  let loaded: string | undefined;
  // `engine` exists on world rank 0 only (the one talking to the servers); every rank writes (rank 0 alone does)
  return async (engine: RolloutEngine | undefined, isMain: boolean): Promise<void> => {
    await write(dir, isMain);
    if (!engine) return;
    if (!('loadLoraAdapter' in engine))
      throw new TrainersError(
        'INVALID_ARGUMENT',
        'actor.lora.rank with rollout.engine=sglang needs the SGLang client',
      );
    const client = engine as SGLangEngine;
    const name = `actor-${++version}`;
    await client.loadLoraAdapter(name, dir);
    if (loaded) await client.unloadLoraAdapter(loaded);
    loaded = name;
  };
}

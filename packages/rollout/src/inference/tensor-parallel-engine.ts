import {
  type DecoderModel,
  type Generator,
  createGenerator,
  tensorParallelLead,
} from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { RolloutError } from '../errors.js';
import type { CheckpointEngine, CheckpointEngineOptions } from './checkpoint-engine.js';
import { createEmbeddedEngine } from './embedded-engine.js';
import type { LoraCheckpointEngine } from './lora-engine.js';
import { checkServedArchitecture } from './served-architecture.js';
import {
  LOAD_LORA,
  RELOAD,
  STOP,
  UNLOAD_LORA,
  loadAgreed,
  sendCommand,
} from './tensor-parallel-commands.js';
import {
  type GroupState,
  defaultHeartbeatMs,
  groupState,
  guardedLead,
  startHeartbeat,
} from './tensor-parallel-group.js';
import {
  type RankWeights,
  freeRankWeights,
  loadRankAdapter,
  rankBytesOf,
  reloadRankBase,
  unloadRankAdapter,
} from './tensor-parallel-weights.js';

/** Options of {@link loadTensorParallelEngine}. */
export interface TensorParallelEngineOptions extends CheckpointEngineOptions {
  /**
   * While idle, the lead sends an empty op this often so the followers' wait never times out
   * (default: a quarter of RL2_COLLECTIVE_TIMEOUT_MS, at most 10 s).
   */
  readonly heartbeatMs?: number;
  /** Told once when the group fails (a rank lost: a collective threw); the engine then refuses work. */
  readonly onFailure?: (error: Error) => void;
  readonly log?: (line: string) => void;
  /**
   * Serve LoRA adapters (`rl2 serve --tp N --lora NAME=DIR`, `--enable-lora`): these PEFT folders
   * first, others by `loadLoraAdapter`; the engine is then a {@link LoraCheckpointEngine}.
   */
  readonly loras?: readonly { name: string; path: string }[];
}

/** The lead's generators over the group: the base's and one per adapter, by name. */
function openGenerators(
  weights: RankWeights,
  tp: ProcessGroup,
  group: GroupState,
  options: TensorParallelEngineOptions,
) {
  const lead = guardedLead(tensorParallelLead(tp), group);
  const eos = weights.base.loaded.generationConfig?.eosTokenIds;
  const generatorOf = (slot: number, model: DecoderModel) =>
    createGenerator(model, {
      maxBatch: options.maxBatch,
      seed: options.seed,
      decode: options.decode,
      stepper: lead.stepper(slot, model),
      ...(eos && eos.length > 0 ? { eosTokenIds: eos } : {}),
    });
  const adapters = new Map<string, Generator>(
    [...weights.adapters].map(([name, a]) => [name, generatorOf(a.slot, a.lora.model)]),
  );
  const base = generatorOf(0, weights.base.loaded.model);
  const idle = () => Promise.all([base, ...adapters.values()].map((g) => g.idle()));
  return { lead, base, adapters, idle };
}

/**
 * The lead of `rl2 serve --tp N` (tp group rank 0): loads its shards of `modelPath` while the
 * other ranks run {@link followTensorParallelEngine}, generates with continuous-batching
 * generators over a `tensorParallelLead` (the base's, and with `loras` one per LoRA adapter,
 * each rank holding its part of every adapter), and keeps idle followers alive with heartbeats.
 * `updateWeights(path)`, loading and unloading an adapter hold new requests, wait for running
 * ones, and have every rank do the same (all or none: a failed load keeps the old weights
 * everywhere). `close()` releases the followers. When a rank is lost the engine fails every
 * request with that error and calls `onFailure`.
 */
export async function loadTensorParallelEngine(
  modelPath: string,
  tp: ProcessGroup,
  options: TensorParallelEngineOptions = {},
): Promise<CheckpointEngine> {
  const log = options.log ?? (() => {});
  const group = groupState(options.onFailure);
  const weights: RankWeights = { base: await loadAgreed(modelPath, tp, log), adapters: new Map() };
  let path = modelPath;
  let nextSlot = 1;
  let current = openGenerators(weights, tp, group, options);
  let held: Promise<void> | undefined; // new requests wait while weights change or the group stops

  const timer = startHeartbeat(
    group,
    options.heartbeatMs ?? defaultHeartbeatMs(),
    () => held !== undefined,
    () => current.lead.heartbeat(),
  );

  /**
   * Runs `work` with new requests held and none running, the followers out of their forward
   * loop; then the generators start anew on what every rank holds.
   */
  const exclusive = async <T>(work: () => Promise<T>): Promise<T> => {
    while (held) await held;
    let release = () => {};
    held = new Promise<void>((r) => {
      release = r;
    });
    try {
      await current.idle();
      await current.lead.idle();
      if (group.failure) throw group.failure;
      current.lead.close();
      return await work();
    } catch (e) {
      if (e instanceof RolloutError) throw e;
      group.fail(e as Error);
      throw group.failure;
    } finally {
      current = openGenerators(weights, tp, group, options);
      held = undefined;
      release();
    }
  };

  const pick = (name: string | undefined): Generator => {
    if (name === undefined) return current.base;
    const g = current.adapters.get(name);
    if (!g)
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `no LoRA adapter "${name}" is loaded (loaded: ${[...current.adapters.keys()].join(', ') || 'none'}); ` +
          'POST /load_lora_adapter first',
      );
    return g;
  };

  const engine = createEmbeddedEngine({
    generator: {
      generate: async (request) => {
        while (held) await held;
        if (group.failure) throw group.failure;
        return pick(request.lora).generate(request);
      },
    },
    loadWeights: async (next) => {
      // checked before the followers are told: a refused update leaves every rank serving
      await checkServedArchitecture(weights.base.loaded.model.config, next);
      await exclusive(async () => {
        sendCommand(tp, RELOAD, next);
        await reloadRankBase(weights, next, tp, log);
        path = next;
      });
    },
  });
  const loadAdapter = (name: string, adapterPath: string) =>
    exclusive(async () => {
      const slot = nextSlot++;
      sendCommand(tp, LOAD_LORA, JSON.stringify({ name, path: adapterPath, slot }));
      await loadRankAdapter(weights, name, adapterPath, slot, tp, log);
    });
  const unloadAdapter = async (name: string) => {
    pick(name);
    await exclusive(async () => {
      sendCommand(tp, UNLOAD_LORA, name);
      unloadRankAdapter(weights, name);
    });
  };
  const served: CheckpointEngine & Pick<LoraCheckpointEngine, 'loraAdapters'> = {
    ...engine,
    async health() {
      const error = group.failure?.message;
      return {
        ok: !error,
        backends: [{ name: `tp(${tp.size})`, ok: !error, ...(error ? { error } : {}) }],
      };
    },
    get modelPath() {
      return path;
    },
    get modelConfig() {
      return weights.base.loaded.model.config;
    },
    get rankParamBytes() {
      return rankBytesOf(weights);
    },
    get loraAdapters() {
      return new Map([...weights.adapters].map(([name, a]) => [name, a.path]));
    },
    // the sharded forward runs tfjs ops on float32 parameters
    weightDtype: 'float32',
    async close() {
      clearInterval(timer);
      if (group.failure) return;
      await exclusive(async () => {
        sendCommand(tp, STOP);
        freeRankWeights(weights);
      }).catch(() => {});
    },
    // with LoRA: what server/lora-control.ts finds (`loadLoraAdapter` in the engine)
    ...(options.loras ? { loadLoraAdapter: loadAdapter, unloadLoraAdapter: unloadAdapter } : {}),
  };
  try {
    for (const a of options.loras ?? []) await loadAdapter(a.name, a.path);
  } catch (e) {
    await served.close();
    throw e;
  }
  return served;
}

import {
  type TensorParallelStepper,
  createGenerator,
  disposeParams,
  tensorParallelStepper,
} from '@rl2/models';
import type { ProcessGroup } from '@rl2/parallel';
import { RolloutError } from '../errors.js';
import type { CheckpointEngine, CheckpointEngineOptions } from './checkpoint-engine.js';
import { createEmbeddedEngine } from './embedded-engine.js';
import { checkServedArchitecture } from './served-architecture.js';
import {
  type AgreedLoad,
  RELOAD,
  STOP,
  loadAgreed,
  sendCommand,
} from './tensor-parallel-commands.js';

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
}

function defaultHeartbeatMs(): number {
  const timeout = Number(process.env.RL2_COLLECTIVE_TIMEOUT_MS) || 300_000;
  return Math.min(10_000, Math.max(50, timeout / 4));
}

/**
 * The stepper the generator gets: every op marks the group busy (no heartbeat may cut into a
 * forward's collectives) and a collective that throws marks the group failed; after that every
 * op throws that error at once instead of waiting on lost ranks.
 */
function guardedStepper(inner: TensorParallelStepper, group: GroupState): TensorParallelStepper {
  const guard = <T>(run: () => T): T => {
    if (group.failure) throw group.failure;
    group.lastOp = Date.now();
    try {
      return run();
    } catch (e) {
      group.fail(e as Error);
      throw e;
    }
  };
  const guardAsync = async <T>(run: () => Promise<T>): Promise<T> => {
    group.busy += 1;
    try {
      return await guard(run);
    } catch (e) {
      group.fail(e as Error);
      throw e;
    } finally {
      group.busy -= 1;
      group.lastOp = Date.now();
    }
  };
  return {
    get broken() {
      return inner.broken ?? group.failure;
    },
    prefill: (...a) => guardAsync(() => inner.prefill(...a)),
    step: (...a) => guardAsync(() => inner.step(...a)),
    select: (keep) => guard(() => inner.select(keep)),
    reset: () => {
      if (!group.failure) guard(() => inner.reset());
    },
    heartbeat: () => guard(() => inner.heartbeat()),
    close: () => guard(() => inner.close()),
  };
}

/** What the lead knows of its group: ops in flight, the last op's time, and the failure once a rank is lost. */
interface GroupState {
  busy: number;
  lastOp: number;
  failure?: Error;
  fail(error: Error): void;
}

function groupState(onFailure?: (error: Error) => void): GroupState {
  const group: GroupState = {
    busy: 0,
    lastOp: Date.now(),
    fail(error) {
      if (group.failure) return;
      group.failure = new RolloutError(
        'ENGINE_FAILED',
        `the tensor-parallel group failed (a rank was lost?): ${error.message}`,
        { cause: error },
      );
      onFailure?.(group.failure);
    },
  };
  return group;
}

/** The generator over this rank's shards, driving the group through a guarded stepper. */
function openGenerator(
  path: string,
  agreed: AgreedLoad,
  tp: ProcessGroup,
  group: GroupState,
  options: TensorParallelEngineOptions,
) {
  const { model, generationConfig } = agreed.loaded;
  const stepper = guardedStepper(tensorParallelStepper(model, tp), group);
  const eos = generationConfig?.eosTokenIds;
  const generator = createGenerator(model, {
    maxBatch: options.maxBatch,
    seed: options.seed,
    decode: options.decode,
    stepper,
    ...(eos && eos.length > 0 ? { eosTokenIds: eos } : {}),
  });
  return { path, agreed, model, generator, stepper };
}

/** Every `everyMs` without an op (and not `paused`), `beat()`: the followers' wait restarts. */
function startHeartbeat(
  group: GroupState,
  everyMs: number,
  paused: () => boolean,
  beat: () => void,
) {
  const timer = setInterval(() => {
    if (paused() || group.failure || group.busy > 0 || Date.now() - group.lastOp < everyMs) return;
    try {
      beat();
    } catch {
      // the guarded stepper reported it (group.fail)
    }
  }, everyMs / 4);
  timer.unref();
  return timer;
}

/**
 * The lead of `rl2 serve --tp N` (tp group rank 0): loads its shards of `modelPath` while the
 * other ranks run {@link followTensorParallelEngine}, generates with the continuous-batching
 * generator over a `tensorParallelStepper`, and keeps idle followers alive with heartbeats.
 * `updateWeights(path)` holds new requests, waits for running ones, and has every rank load
 * its shards of `path` (all or none: a failed load keeps the old weights everywhere).
 * `close()` releases the followers. When a rank is lost the engine fails every request with
 * that error and calls `onFailure`.
 */
export async function loadTensorParallelEngine(
  modelPath: string,
  tp: ProcessGroup,
  options: TensorParallelEngineOptions = {},
): Promise<CheckpointEngine> {
  const log = options.log ?? (() => {});
  const group = groupState(options.onFailure);
  const open = (path: string, agreed: AgreedLoad) =>
    openGenerator(path, agreed, tp, group, options);
  let current = open(modelPath, await loadAgreed(modelPath, tp, log));
  let held: Promise<void> | undefined; // new requests wait while weights reload or the group stops

  const timer = startHeartbeat(
    group,
    options.heartbeatMs ?? defaultHeartbeatMs(),
    () => held !== undefined,
    () => current.stepper.heartbeat(),
  );

  /** Runs `work` with new requests held and none running, the followers out of their forward loop. */
  const exclusive = async <T>(work: () => Promise<T>): Promise<T> => {
    while (held) await held;
    let release = () => {};
    held = new Promise<void>((r) => {
      release = r;
    });
    try {
      await current.generator.idle();
      if (group.failure) throw group.failure;
      current.stepper.close();
      return await work();
    } finally {
      held = undefined;
      release();
    }
  };

  const engine = createEmbeddedEngine({
    generator: {
      generate: async (request) => {
        while (held) await held;
        if (group.failure) throw group.failure;
        return current.generator.generate(request);
      },
    },
    loadWeights: async (path) => {
      // checked before the followers are told: a refused update leaves every rank serving
      await checkServedArchitecture(current.model.config, path);
      await exclusive(async () => {
        const old = current;
        try {
          sendCommand(tp, RELOAD, path);
          current = open(path, await loadAgreed(path, tp, log));
        } catch (e) {
          // the followers are back in their forward loop on their old shards: so is the lead
          current = open(old.path, old.agreed);
          if (e instanceof RolloutError) throw e;
          group.fail(e as Error);
          throw group.failure;
        }
        disposeParams(old.model.params);
      });
    },
  });
  return {
    ...engine,
    async health() {
      const error = group.failure?.message;
      return {
        ok: !error,
        backends: [{ name: `tp(${tp.size})`, ok: !error, ...(error ? { error } : {}) }],
      };
    },
    get modelPath() {
      return current.path;
    },
    get modelConfig() {
      return current.model.config;
    },
    get rankParamBytes() {
      return current.agreed.rankBytes;
    },
    // the sharded forward runs tfjs ops on float32 parameters
    weightDtype: 'float32',
    async close() {
      clearInterval(timer);
      if (group.failure) return;
      await exclusive(async () => {
        sendCommand(tp, STOP);
        disposeParams(current.model.params);
      }).catch(() => {});
    },
  };
}

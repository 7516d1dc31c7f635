import type { BatchStepper, TensorParallelLead } from '@rl2/models';
import { RolloutError } from '../errors.js';

/** What the lead knows of its group: ops in flight, the last op's time, and the failure once a rank is lost. */
export interface GroupState {
  busy: number;
  lastOp: number;
  failure?: Error;
  fail(error: Error): void;
}

export function groupState(onFailure?: (error: Error) => void): GroupState {
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

/** While idle, the lead's heartbeat period: a quarter of RL2_COLLECTIVE_TIMEOUT_MS, at most 10 s. */
export function defaultHeartbeatMs(): number {
  const timeout = Number(process.env.RL2_COLLECTIVE_TIMEOUT_MS) || 300_000;
  return Math.min(10_000, Math.max(50, timeout / 4));
}

/**
 * The lead the generators get: every op marks the group busy (no heartbeat may cut into a
 * forward's collectives) and a collective that throws marks the group failed; after that every
 * op throws that error at once instead of waiting on lost ranks.
 */
export function guardedLead(inner: TensorParallelLead, group: GroupState): TensorParallelLead {
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
  const guarded = (stepper: BatchStepper): BatchStepper => ({
    prefill: (...a) => guardAsync(() => stepper.prefill(...a)),
    step: (...a) => guardAsync(() => stepper.step(...a)),
    select: (keep) => guard(() => stepper.select(keep)),
    reset: () => {
      if (!group.failure) guard(() => stepper.reset());
    },
  });
  return {
    get broken() {
      return inner.broken ?? group.failure;
    },
    stepper: (slot, model) => guarded(inner.stepper(slot, model)),
    heartbeat: () => guard(() => inner.heartbeat()),
    close: () => guard(() => inner.close()),
    idle: () => inner.idle(),
  };
}

/** Every `everyMs` without an op (and not `paused`), `beat()`: the followers' wait restarts. */
export function startHeartbeat(
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
      // the guarded lead reported it (group.fail)
    }
  }, everyMs / 4);
  timer.unref();
  return timer;
}

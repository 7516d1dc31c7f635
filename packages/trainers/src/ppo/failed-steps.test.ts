import { RolloutError, type RolloutMetrics } from '@rl2/rollout';
import { describe, expect, it } from 'vitest';
import { stopOnFailedSteps } from './failed-steps.js';
import type { RolloutShard } from './gather-rollout.js';

const metrics = (
  samples: number,
  failures: number,
  cause: Partial<RolloutMetrics> = {},
): RolloutMetrics => ({
  'reward/mean': 0,
  'reward/std': 0,
  'response_length/mean': 0,
  'turns/mean': 0,
  length_clip_ratio: 0,
  samples,
  failures,
  env_errors: failures,
  env_timeouts: 0,
  engine_errors: 0,
  filtering_ratio: 0,
  groups: 0,
  carried_groups: 0,
  tokens_per_s: 0,
  rollout_s: 0,
  ...cause,
});
const shard = (m: RolloutMetrics): RolloutShard => ({
  batch: { sequences: [], trajectoryIds: [], responsesPerPrompt: 2, trajectories: 0 },
  metrics: m,
  firstFailure: 'sample 0 of prompt 0 failed (ENV_STEP): env.mjs step() threw: boom',
});

/** A rollout whose steps yield the given shards (or throw the given errors) in order. */
function scripted(steps: (RolloutShard | Error)[]) {
  let i = 0;
  return {
    async step() {
      const next = steps[i++] as RolloutShard | Error;
      if (next instanceof Error) throw next;
      return next;
    },
  };
}

describe('stopOnFailedSteps', () => {
  it('tolerates rollout.max_failed_steps steps in a row with no usable sample, stops on one more, after saving', async () => {
    const lines: string[] = [];
    let saved = 0;
    const failed = shard(metrics(4, 4));
    const guarded = stopOnFailedSteps(
      scripted([failed, shard(metrics(4, 3)), failed, failed, failed]),
      {
        maxFailedSteps: 2,
        log: (l) => lines.push(l),
        beforeStop: async () => {
          saved += 1;
        },
      },
    );
    await guarded.step(1);
    await guarded.step(2); // one usable sample: the count starts again
    await guarded.step(3);
    await guarded.step(4);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe(
      'rollout step 4: all 4 samples failed (4 env errors, 0 env timeouts, 0 engine errors; ' +
        'first: sample 0 of prompt 0 failed (ENV_STEP): env.mjs step() threw: boom); nothing to ' +
        'train on: 2 of rollout.max_failed_steps=2 such steps in a row tolerated',
    );
    expect(saved).toBe(0);
    await expect(guarded.step(5)).rejects.toMatchObject({
      code: 'ROLLOUT_FAILED',
      message: expect.stringContaining(
        '3 step(s) in a row without a usable sample, more than rollout.max_failed_steps=2: ' +
          'stopping. Fix the env (rollout.env_path) or the engine',
      ),
    });
    expect(saved).toBe(1);
  });

  it('stops at the first failed step by default; an unreachable engine stops at once; other errors pass through', async () => {
    const strict = stopOnFailedSteps(
      scripted([shard(metrics(2, 2, { env_errors: 0, engine_errors: 2 }))]),
      { maxFailedSteps: 0, log: () => {} },
    );
    await expect(strict.step(1)).rejects.toThrow(
      /all 2 samples failed \(0 env errors, 0 env timeouts, 2 engine errors/,
    );
    let saved = false;
    const gone = new RolloutError(
      'ENGINE_UNREACHABLE',
      'rollout step 3: the inference engine cannot be reached after its retries, stopping: ' +
        'cannot reach http://127.0.0.1:9/generate (ECONNREFUSED)',
    );
    const engine = stopOnFailedSteps(scripted([gone]), {
      maxFailedSteps: 5,
      log: () => {},
      beforeStop: async () => {
        saved = true;
      },
    });
    await expect(engine.step(3)).rejects.toMatchObject({
      code: 'ROLLOUT_FAILED',
      message: expect.stringContaining(
        '(ECONNREFUSED). Once it is back, trainer.load_ckpt_from=latest resumes from the last checkpoint.',
      ),
    });
    expect(saved).toBe(true);
    const other = stopOnFailedSteps(scripted([new Error('shape mismatch')]), {
      maxFailedSteps: 0,
      log: () => {},
    });
    await expect(other.step(1)).rejects.toThrow('shape mismatch');
    // nothing sampled (no prompts left) is not a failure
    await expect(
      stopOnFailedSteps(scripted([shard(metrics(0, 0))]), {
        maxFailedSteps: 0,
        log: () => {},
      }).step(1),
    ).resolves.toBeDefined();
  });

  it('announces each step whose every group was filtered out, resets on a step with a group, stops past rollout.max_filtered_steps', async () => {
    const lines: string[] = [];
    let saved = 0;
    const filtered = shard(metrics(4, 0, { env_errors: 0, filtering_ratio: 1, groups: 0 }));
    const trained = shard(metrics(4, 0, { env_errors: 0, filtering_ratio: 0.5, groups: 1 }));
    const guarded = stopOnFailedSteps(scripted([filtered, trained, filtered, filtered]), {
      maxFailedSteps: 0,
      maxFilteredSteps: 1,
      responsesPerPrompt: 2,
      log: (l) => lines.push(l),
      beforeStop: async () => {
        saved += 1;
      },
    });
    await guarded.step(1);
    await guarded.step(2); // a group to train on: the count starts again
    await guarded.step(3);
    expect(lines).toEqual(
      [1, 3].map(
        (k) =>
          `rollout step ${k}: all 2 groups filtered out (rollout.dynamic_filtering=true drops a group whose ` +
          'rewards are all equal (its advantages are 0)), nothing to train on: 1 of ' +
          'rollout.max_filtered_steps=1 such steps in a row tolerated',
      ),
    );
    await expect(guarded.step(4)).rejects.toMatchObject({
      code: 'ROLLOUT_FAILED',
      message: expect.stringContaining(
        '2 steps in a row without a group to train on, more than rollout.max_filtered_steps=1',
      ),
    });
    expect(saved).toBe(1);
  });
});

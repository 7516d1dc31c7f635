import { RolloutError } from '@rl2/rollout';
import { TrainersError } from '../errors.js';
import type { RolloutShard } from './gather-rollout.js';

/** The training rollout as `ppoStep` calls it. */
export interface StepRollout {
  step(step: number): Promise<RolloutShard>;
}

export interface FailedStepPolicy {
  /** rollout.max_failed_steps: steps in a row without a usable sample that are tolerated. */
  readonly maxFailedSteps: number;
  /**
   * rollout.max_filtered_steps: steps in a row whose every group dynamic filtering dropped that
   * are tolerated (each is announced; default: no limit).
   */
  readonly maxFilteredSteps?: number;
  /** rollout.responses_per_prompt, to count the filtered groups. */
  readonly responsesPerPrompt?: number;
  /** Where the tolerated failed steps are announced. */
  readonly log: (line: string) => void;
  /** Runs before the run is stopped (a checkpoint of the steps done, so nothing is lost). */
  readonly beforeStop?: () => Promise<void>;
}

/** Whether a rollout step yielded no usable sample: every sample failed (env or engine). */
const noUsableSample = (m: RolloutShard['metrics']) => m.samples > 0 && m.failures === m.samples;

const causes = (m: RolloutShard['metrics']) =>
  `${m.env_errors} env errors, ${m.env_timeouts} env timeouts, ${m.engine_errors} engine errors`;

/** Whether dynamic filtering left a step with samples but no group to train on. */
const allFiltered = (m: RolloutShard['metrics']) =>
  m.samples > m.failures && m.groups === 0 && m.filtering_ratio > 0;

const FILTER_KEYS =
  'rollout.dynamic_filtering=true drops a group whose rewards are all equal (its advantages are 0)';

/**
 * Stops a PPO run that trains on nothing: a step where every sample failed counts as failed,
 * more than `maxFailedSteps` of them in a row throw ROLLOUT_FAILED (after `beforeStop`), and an
 * engine that stays unreachable past its retries (ENGINE_UNREACHABLE from the rollout) stops
 * the run at once. A step with any usable sample resets the count. A step whose every group
 * dynamic filtering dropped is announced, and more than `maxFilteredSteps` of them in a row
 * throw ROLLOUT_FAILED naming the filter keys; a step with a group to train on resets that count.
 */
export function stopOnFailedSteps(rollout: StepRollout, policy: FailedStepPolicy): StepRollout {
  let failedInARow = 0;
  let filteredInARow = 0;
  const maxFiltered = policy.maxFilteredSteps ?? Number.POSITIVE_INFINITY;
  /** Announces a step that dynamic filtering left empty; stops past maxFilteredSteps in a row. */
  const filteredStep = (k: number, m: RolloutShard['metrics']) => {
    filteredInARow = allFiltered(m) ? filteredInARow + 1 : 0;
    if (filteredInARow === 0) return undefined;
    const g = policy.responsesPerPrompt;
    const count =
      g && m.failures === 0 ? `all ${Math.round(m.samples / g)} groups` : 'every finished group';
    const what =
      `rollout step ${k}: ${count} filtered out (${FILTER_KEYS}), nothing to train on` +
      (m.failures > 0 ? ` (${m.failures} failed samples: ${causes(m)})` : '');
    if (filteredInARow > maxFiltered) {
      return stop(
        new TrainersError(
          'ROLLOUT_FAILED',
          `${what}. ${filteredInARow} steps in a row without a group to train on, more than ` +
            `rollout.max_filtered_steps=${maxFiltered}: stopping. The rewards do not tell the ` +
            'responses apart: check the env (rollout.env_path) and the answers, raise ' +
            'rollout.responses_per_prompt or the sampling temperature ' +
            '(rollout.train_sampling_params.temperature), or set rollout.dynamic_filtering=false.',
        ),
      );
    }
    policy.log(
      `${what}: ${filteredInARow} of rollout.max_filtered_steps=${maxFiltered} such steps in a row tolerated`,
    );
    return undefined;
  };
  const stop = async (error: Error): Promise<never> => {
    await policy.beforeStop?.();
    throw error;
  };
  return {
    async step(k) {
      let res: RolloutShard;
      try {
        res = await rollout.step(k);
      } catch (e) {
        if (e instanceof RolloutError && e.code === 'ENGINE_UNREACHABLE') {
          const resume =
            'Once it is back, trainer.load_ckpt_from=latest resumes from the last checkpoint.';
          return stop(
            new TrainersError(
              'ROLLOUT_FAILED',
              `${e.message}${e.message.endsWith('.') ? '' : '.'} ${resume}`,
            ),
          );
        }
        throw e;
      }
      if (!noUsableSample(res.metrics)) {
        failedInARow = 0;
        await filteredStep(k, res.metrics);
        return res;
      }
      failedInARow += 1;
      const what =
        `rollout step ${k}: all ${res.metrics.samples} samples failed ` +
        `(${causes(res.metrics)}; first: ${res.firstFailure ?? 'see above'})`;
      if (failedInARow > policy.maxFailedSteps) {
        return stop(
          new TrainersError(
            'ROLLOUT_FAILED',
            `${what}. ${failedInARow} step(s) in a row without a usable sample, more than ` +
              `rollout.max_failed_steps=${policy.maxFailedSteps}: stopping. ` +
              'Fix the env (rollout.env_path) or the engine, or raise rollout.max_failed_steps to wait out a flaky one.',
          ),
        );
      }
      policy.log(
        `${what}; nothing to train on: ${failedInARow} of rollout.max_failed_steps=${policy.maxFailedSteps} such steps in a row tolerated`,
      );
      return res;
    },
  };
}

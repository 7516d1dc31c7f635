import { setMaxListeners } from 'node:events';
import { join } from 'node:path';
import type { RolloutEngine, SamplingParams } from '../inference/rollout-engine.js';
import type { Environment, RolloutPrompt } from '../env/environment.js';
import { RolloutError } from '../errors.js';
import type { RolloutTokenizer } from '../trajectory/rollout-tokenizer.js';
import { runTrajectory } from '../trajectory/run-trajectory.js';
import { type TrainingBatch, toTrainingBatch } from '../trajectory/to-training-batch.js';
import type { Trajectory } from '../trajectory/trajectory.js';
import { isUniformGroup } from './dynamic-filter.js';
import { type RolloutMetrics, summariseRollout } from './rollout-metrics.js';
import { Semaphore } from './semaphore.js';
import { type RolloutRecord, writeRolloutsJsonl } from './write-rollouts-jsonl.js';

export interface RolloutRunnerOptions {
  engine: RolloutEngine;
  env: Environment;
  tokenizer: RolloutTokenizer;
  /** The next `count` training prompts (fewer or none when the data is exhausted). */
  nextPrompts: (count: number) => RolloutPrompt[] | Promise<RolloutPrompt[]>;
  /** Groups (prompts) handed to training per step. */
  promptsPerStep: number;
  /** Responses sampled per prompt (the group size G). Default 1. */
  responsesPerPrompt?: number;
  /** Default 1 (single turn). */
  maxTurns?: number;
  /** Longest sequence a trajectory may grow to (see runTrajectory). Default: no limit. */
  maxSequenceTokens?: number;
  sampling: SamplingParams;
  /** Sampling for `evaluate`. Default: `sampling` at temperature 0. */
  evalSampling?: SamplingParams;
  /** Samples (trajectories) in flight at once. Default 64. */
  concurrency?: number;
  /** Base seed: sample s of launched group g uses seed + (g*G + s)*1000 + turn. Default: unseeded. */
  seed?: number;
  /** Drop groups whose rewards are all equal. Default false. */
  dynamicFiltering?: boolean;
  /** After filtering or failures, launch more prompts until promptsPerStep groups are accepted. Default false. */
  refill?: boolean;
  /** Cap on groups launched in one step with refill. Default 4 * promptsPerStep. */
  maxGroupsPerStep?: number;
  /**
   * Groups kept generating at once (oversampling). Default promptsPerStep. More than
   * promptsPerStep lets a step end on the fastest groups: the rest are cancelled, or carried
   * with partialRollout.
   */
  groupsInFlight?: number;
  /** Pause the engine once enough groups finished and carry the unfinished ones to the next step. Default false. */
  partialRollout?: boolean;
  /**
   * 'skip' (default): a failed sample drops its group, the run goes on. 'stop': the step throws
   * ROLLOUT_FAILED. Either way an engine that cannot be reached after its retries
   * (ENGINE_UNREACHABLE) throws at once: every other sample would fail the same way.
   */
  onSampleError?: 'skip' | 'stop';
  /** Folder for step-N.jsonl / eval-step-N.jsonl; nothing is written without it. */
  saveDir?: string;
  /** Receives one line per failed sample. Default console.warn. */
  log?: (message: string) => void;
}

/** What one training rollout step hands to the trainer. */
export interface RolloutStepResult {
  /** Accepted groups, each G trajectories of one prompt. */
  groups: Trajectory[][];
  /** The same groups in the training layout (shifted sequences + trajectory ids). */
  batch: TrainingBatch;
  metrics: RolloutMetrics;
  /** The first failed sample of the step, as logged (`sample 0 of prompt 3 failed (ENV_STEP): ...`). */
  firstFailure?: string;
}

export interface RolloutRunner {
  /** Runs a training rollout step: all prompts x responses in flight under the concurrency limit. */
  step(step: number): Promise<RolloutStepResult>;
  /** Runs each prompt once at `evalSampling` (temperature 0); no filtering, nothing carried. */
  evaluate(
    prompts: readonly RolloutPrompt[],
    step: number,
  ): Promise<{ trajectories: Trajectory[]; metrics: RolloutMetrics }>;
  /** Groups generating in the background (partial rollout), carried to the next step. */
  readonly carried: number;
  /** Cancels carried groups and resumes the engine if it was paused. */
  close(): Promise<void>;
}

interface RunningGroup {
  serial: number;
  promise: Promise<{ serial: number; trajectories: Trajectory[] }>;
  abort: AbortController;
}

/**
 * The rollout loop of a PPO/GRPO step, RL2's rollout with refill added: launches
 * promptsPerStep x responsesPerPrompt trajectories under a concurrency limit, takes groups as
 * they finish, drops failed groups (counted, logged) and uniform ones (dynamic filtering),
 * refills from `nextPrompts` if asked, and stops once promptsPerStep groups are accepted;
 * the rest are cancelled, or with partialRollout paused and finished in the next step. The
 * accepted groups (and the saved records) are handed over in launch order, not in the order
 * they finished: which group finishes first depends on timing, and the batch order changes
 * the training step's floating-point sums, so two runs of one seed would drift apart.
 */
export function createRolloutRunner(options: RolloutRunnerOptions): RolloutRunner {
  const g = options.responsesPerPrompt ?? 1;
  const target = options.promptsPerStep;
  // messages name the option and the `rl2 ppo` key that sets it
  for (const [key, v] of [
    ['promptsPerStep (rollout.train_prompts_per_rollout)', target],
    ['responsesPerPrompt (rollout.responses_per_prompt)', g],
  ] as const) {
    if (!Number.isInteger(v) || v < 1)
      throw new RolloutError('INVALID_ARGUMENT', `${key} must be an integer >= 1, got ${v}`);
  }
  const maxGroups = options.maxGroupsPerStep ?? 4 * target;
  if (!Number.isInteger(maxGroups) || maxGroups < target) {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `maxGroupsPerStep (rollout.max_groups_per_rollout) must be an integer >= promptsPerStep (${target}), got ${maxGroups}`,
    );
  }
  const inFlight = options.groupsInFlight ?? target;
  if (!Number.isInteger(inFlight) || inFlight < target || inFlight > maxGroups) {
    throw new RolloutError(
      'INVALID_ARGUMENT',
      `groupsInFlight (rollout.groups_in_flight) must be an integer in [promptsPerStep, ` +
        `maxGroupsPerStep] = [${target}, ${maxGroups}], got ${inFlight}`,
    );
  }
  const semaphore = new Semaphore(options.concurrency ?? 64);
  const log = options.log ?? ((m: string) => console.warn(m));
  let carry: RunningGroup[] = [];
  let paused = false;
  let serial = 0;

  function launch(
    prompt: RolloutPrompt,
    sampling: SamplingParams,
    samples: number,
    seeded: boolean,
  ): RunningGroup {
    const groupSerial = serial;
    serial += 1;
    const abort = new AbortController();
    // every sample of the group listens to this signal (engine request, env step): no leak
    // warning for a group of more than 10 samples
    setMaxListeners(4 * samples + 10, abort.signal);
    const runs = Array.from({ length: samples }, (_, s) =>
      semaphore.run(() =>
        runTrajectory(
          prompt,
          { promptId: groupSerial, sampleId: s },
          {
            engine: options.engine,
            env: options.env,
            tokenizer: options.tokenizer,
            sampling,
            maxTurns: options.maxTurns,
            maxSequenceTokens: options.maxSequenceTokens,
            seed:
              seeded && options.seed !== undefined
                ? options.seed + (groupSerial * samples + s) * 1000
                : undefined,
            signal: abort.signal,
          },
        ),
      ),
    );
    const promise = Promise.all(runs).then((trajectories) => ({
      serial: groupSerial,
      trajectories,
    }));
    promise.catch(() => {}); // cancelled groups reject; nobody waits for them
    return { serial: groupSerial, promise, abort };
  }

  /** An engine that cannot be reached after its retries fails every other sample too: stop at once. */
  function stopIfEngineGone(trajectories: Trajectory[], what: string): void {
    const gone = trajectories.find((t) => t.error?.code === 'ENGINE_UNREACHABLE');
    if (gone?.error)
      throw new RolloutError(
        'ENGINE_UNREACHABLE',
        `${what}: the inference engine cannot be reached after its retries, stopping: ${gone.error.message}`,
      );
  }

  /** Logs each failed sample; returns the first line. Throws when the engine is gone or onSampleError is 'stop'. */
  function reportFailures(trajectories: Trajectory[], what: string): string | undefined {
    let first: string | undefined;
    for (const t of trajectories) {
      if (!t.error) continue;
      const line = `sample ${t.sampleId} of prompt ${t.promptId} failed (${t.error.code}): ${t.error.message}`;
      first ??= line;
      log(`${what}: ${line}`);
      stopIfEngineGone([t], what);
      if (options.onSampleError === 'stop') {
        throw new RolloutError(
          'ROLLOUT_FAILED',
          `${what}: ${line} (rollout.on_sample_error=stop; set it to skip to drop such groups and go on)`,
        );
      }
    }
    return first;
  }

  async function resumeEngine(): Promise<void> {
    if (paused) {
      paused = false;
      await options.engine.continue();
    }
  }

  async function save(name: string, records: RolloutRecord[]): Promise<void> {
    if (options.saveDir) await writeRolloutsJsonl(join(options.saveDir, name), records);
  }

  return {
    get carried() {
      return carry.length;
    },

    async step(step: number): Promise<RolloutStepResult> {
      const start = performance.now();
      await resumeEngine();
      const running = new Map<number, RunningGroup>(carry.map((r) => [r.serial, r]));
      carry = [];
      let launched = 0;
      let exhausted = false;
      const launchMore = async (count: number) => {
        const n = Math.min(count, maxGroups - launched);
        if (n <= 0 || exhausted) return;
        const prompts = await options.nextPrompts(n);
        if (prompts.length < n) exhausted = true;
        for (const p of prompts.slice(0, n)) {
          const r = launch(p, options.sampling, g, true);
          running.set(r.serial, r);
          launched += 1;
        }
      };
      // by launch serial: sorted before they are handed over (see above)
      const accepted: Array<{ serial: number; trajectories: Trajectory[] }> = [];
      const records: Array<{ serial: number; records: RolloutRecord[] }> = [];
      let filtered = 0;
      let finished = 0;
      let firstFailure: string | undefined;
      await launchMore(inFlight - running.size);
      try {
        while (accepted.length < target && running.size > 0) {
          const done = await Promise.race([...running.values()].map((r) => r.promise));
          running.delete(done.serial);
          firstFailure ??= reportFailures(done.trajectories, `rollout step ${step}`);
          const failed = done.trajectories.some((t) => t.error);
          const uniform =
            !failed &&
            options.dynamicFiltering === true &&
            isUniformGroup(done.trajectories.map((t) => t.reward));
          if (!failed) finished += 1;
          if (uniform) filtered += 1;
          if (!failed && !uniform) accepted.push(done);
          records.push({
            serial: done.serial,
            records: done.trajectories.map((t) => ({ ...t, step, filtered: uniform })),
          });
          if (options.refill && accepted.length + running.size < target)
            await launchMore(target - accepted.length - running.size);
        }
      } catch (e) {
        for (const r of running.values()) r.abort.abort();
        throw e;
      }
      if (options.partialRollout && running.size > 0) {
        await options.engine.pause();
        paused = true;
        carry = [...running.values()];
      } else {
        for (const r of running.values()) r.abort.abort();
      }
      const bySerial = (a: { serial: number }, b: { serial: number }) => a.serial - b.serial;
      const groups = accepted.sort(bySerial).map((a) => a.trajectories);
      const saved = records.sort(bySerial).flatMap((r) => r.records);
      const metrics = summariseRollout({
        trajectories: saved,
        acceptedGroups: accepted.length,
        filteredGroups: filtered,
        finishedGroups: finished,
        carriedGroups: carry.length,
        seconds: (performance.now() - start) / 1000,
      });
      await save(`step-${step}.jsonl`, saved);
      return {
        groups,
        batch: toTrainingBatch(groups, g),
        metrics,
        ...(firstFailure ? { firstFailure } : {}),
      };
    },

    async evaluate(prompts, step) {
      const start = performance.now();
      await resumeEngine();
      const sampling = options.evalSampling ?? { ...options.sampling, temperature: 0 };
      const groups = await Promise.all(prompts.map((p) => launch(p, sampling, 1, false).promise));
      const trajectories = groups.flatMap((x) => x.trajectories);
      for (const t of trajectories)
        if (t.error)
          log(
            `eval step ${step}: prompt ${t.promptId} failed (${t.error.code}): ${t.error.message}`,
          );
      stopIfEngineGone(trajectories, `eval step ${step}`);
      const metrics = summariseRollout({
        trajectories,
        acceptedGroups: groups.length,
        filteredGroups: 0,
        finishedGroups: groups.length,
        carriedGroups: 0,
        seconds: (performance.now() - start) / 1000,
      });
      await save(
        `eval-step-${step}.jsonl`,
        trajectories.map((t) => ({ ...t, step, filtered: false })),
      );
      return { trajectories, metrics };
    },

    async close() {
      for (const r of carry) r.abort.abort();
      carry = [];
      await resumeEngine();
    },
  };
}

import type { Trajectory } from '../trajectory/trajectory.js';

/** Metrics of one rollout step (or evaluation), flat so they log as they are. */
export interface RolloutMetrics {
  /** Mean / population std of the trajectory rewards (failed samples excluded, filtered groups included). */
  'reward/mean': number;
  'reward/std': number;
  /** Mean generated tokens per trajectory (all turns). */
  'response_length/mean': number;
  'turns/mean': number;
  /** Share of turns that ended at max_new_tokens. */
  length_clip_ratio: number;
  /** Samples that finished (or failed) in this step. */
  samples: number;
  /** Samples whose env or engine failed (left out of training), and by cause: */
  failures: number;
  /** ... the env's step/reset threw or returned a malformed value (ENV_STEP). */
  env_errors: number;
  /** ... the env did not answer within rollout.env_timeout_s (ENV_TIMEOUT). */
  env_timeouts: number;
  /** ... the inference engine failed (ENGINE_*). */
  engine_errors: number;
  /** Groups dropped by dynamic filtering / groups finished without failures. */
  filtering_ratio: number;
  /** Groups handed to training. */
  groups: number;
  /** Groups still generating, carried to the next step (partial rollout). */
  carried_groups: number;
  /** Generated tokens per second of wall time. */
  tokens_per_s: number;
  rollout_s: number;
}

/** Summarises finished trajectories; `filtered` and `finishedGroups` count groups. */
export function summariseRollout(input: {
  trajectories: readonly Trajectory[];
  acceptedGroups: number;
  filteredGroups: number;
  finishedGroups: number;
  carriedGroups: number;
  seconds: number;
}): RolloutMetrics {
  const ok = input.trajectories.filter((t) => !t.error);
  const rewards = ok.map((t) => t.reward);
  const mean = average(rewards);
  const variance = average(rewards.map((r) => (r - mean) ** 2));
  const turns = ok.flatMap((t) => t.turns);
  const count = (cause: FailureCause) =>
    input.trajectories.filter((t) => t.error && failureCause(t.error.code) === cause).length;
  const generated = input.trajectories.reduce(
    (s, t) => s + t.turns.reduce((a, x) => a + x.actionTokens, 0),
    0,
  );
  return {
    'reward/mean': mean,
    'reward/std': Math.sqrt(variance),
    'response_length/mean': average(ok.map((t) => t.turns.reduce((a, x) => a + x.actionTokens, 0))),
    'turns/mean': average(ok.map((t) => t.turns.length)),
    length_clip_ratio: average(turns.map((x) => (x.finishReason === 'length' ? 1 : 0))),
    samples: input.trajectories.length,
    failures: input.trajectories.length - ok.length,
    env_errors: count('env'),
    env_timeouts: count('timeout'),
    engine_errors: count('engine'),
    filtering_ratio: input.finishedGroups > 0 ? input.filteredGroups / input.finishedGroups : 0,
    groups: input.acceptedGroups,
    carried_groups: input.carriedGroups,
    tokens_per_s: input.seconds > 0 ? generated / input.seconds : 0,
    rollout_s: input.seconds,
  };
}

type FailureCause = 'env' | 'timeout' | 'engine' | 'other';

/** What a failed sample's error code blames: the env, its time limit, the engine, or something else (e.g. a prompt with no room left). */
export function failureCause(code: string): FailureCause {
  if (code === 'ENV_TIMEOUT') return 'timeout';
  if (code.startsWith('ENV_')) return 'env';
  if (code.startsWith('ENGINE_')) return 'engine';
  return 'other';
}

function average(xs: readonly number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((s, x) => s + x, 0) / xs.length;
}

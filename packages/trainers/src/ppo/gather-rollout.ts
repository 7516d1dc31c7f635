import type { RolloutMetrics, TrainingBatch, TrainingSequence } from '@rl2/rollout';
import type { DataParallel } from '../parallel-model/data-parallel.js';

/** The part of a rollout step the PPO update reads. */
export interface RolloutShard {
  readonly batch: TrainingBatch;
  readonly metrics: RolloutMetrics;
  /** The first failed sample, as logged (this rank's, after a gather). */
  readonly firstFailure?: string;
}

/** Sums behind one shard's metrics, so the ranks' shards combine into the whole step's. */
const STATS = 15;
function statsOf(m: RolloutMetrics, launchedGroups: number, g: number): number[] {
  const ok = launchedGroups * g - m.failures; // refill off: every launched group finishes
  const turns = m['turns/mean'] * ok;
  // without failures every launched group finished; with them this is approximate
  const finished = Math.max(launchedGroups - m.failures, m.groups);
  return [
    ok,
    m['reward/mean'] * ok,
    (m['reward/std'] ** 2 + m['reward/mean'] ** 2) * ok,
    m['response_length/mean'] * ok,
    turns,
    m.length_clip_ratio * turns,
    m.failures,
    m.filtering_ratio * finished,
    finished,
    m.tokens_per_s * m.rollout_s,
    m.rollout_s,
    m.samples,
    m.env_errors,
    m.env_timeouts,
    m.engine_errors,
  ];
}

function combine(stats: readonly number[][], groups: number): RolloutMetrics {
  const sum = (k: number) => stats.reduce((s, x) => s + (x[k] as number), 0);
  const ok = sum(0);
  const mean = ok > 0 ? sum(1) / ok : 0;
  const turns = sum(4);
  const seconds = Math.max(...stats.map((x) => x[10] as number));
  return {
    'reward/mean': mean,
    'reward/std': ok > 0 ? Math.sqrt(Math.max(0, sum(2) / ok - mean * mean)) : 0,
    'response_length/mean': ok > 0 ? sum(3) / ok : 0,
    'turns/mean': ok > 0 ? turns / ok : 0,
    length_clip_ratio: turns > 0 ? sum(5) / turns : 0,
    samples: Math.round(sum(11)),
    failures: Math.round(sum(6)),
    env_errors: Math.round(sum(12)),
    env_timeouts: Math.round(sum(13)),
    engine_errors: Math.round(sum(14)),
    filtering_ratio: sum(8) > 0 ? sum(7) / sum(8) : 0,
    groups,
    carried_groups: 0,
    tokens_per_s: seconds > 0 ? sum(9) / seconds : 0,
    rollout_s: seconds,
  };
}

const FIELDS = [
  'states',
  'actions',
  'actionMask',
  'eosMask',
  'positionIds',
  'llmLogps',
  'rewards',
] as const;

/** [stats | groups, sequences | per sequence: T, trajectoryId, promptId, then each field's T values]. */
function encode(shard: RolloutShard, launchedGroups: number): Float32Array {
  const { sequences } = shard.batch;
  const out: number[] = [
    ...statsOf(shard.metrics, launchedGroups, shard.batch.responsesPerPrompt),
    shard.metrics.groups,
    sequences.length,
  ];
  for (const s of sequences) {
    out.push(s.states.length, s.trajectoryId, s.promptId);
    for (const f of FIELDS) out.push(...s[f]);
  }
  return Float32Array.from(out);
}

/**
 * All-gathers the ranks' rollout shards (each rank rolled out its contiguous share of the step's
 * prompts) so every rank holds the whole batch in rank order: the shards' lengths are summed
 * over the ranks first, then one zero buffer where each rank fills its slot. Trajectory and
 * prompt ids are renumbered past the earlier ranks' groups; the metrics are recombined from
 * each shard's sums (reward mean/std over all successful samples, rollout_s the slowest rank's).
 * Token ids travel exactly (below 2^24); log-probs and rewards as float32.
 */
export function gatherRollout(
  dp: DataParallel,
  shard: RolloutShard,
  launchedGroups: number,
): RolloutShard {
  const mine = encode(shard, launchedGroups);
  const lengths = new Float32Array(dp.size);
  lengths[dp.rank] = mine.length;
  const sizes = Array.from(dp.allReduceSum(lengths));
  const all = new Float32Array(sizes.reduce((a, b) => a + b, 0));
  all.set(
    mine,
    sizes.slice(0, dp.rank).reduce((a, b) => a + b, 0),
  );
  const buf = dp.allReduceSum(all);
  const g = shard.batch.responsesPerPrompt;
  const stats: number[][] = [];
  const sequences: TrainingSequence[] = [];
  let groups = 0;
  let at = 0;
  for (let r = 0; r < dp.size; r++) {
    const end = at + (sizes[r] as number);
    stats.push(Array.from(buf.subarray(at, at + STATS)));
    const rankGroups = buf[at + STATS] as number;
    const count = buf[at + STATS + 1] as number;
    at += STATS + 2;
    for (let i = 0; i < count; i++) {
      const t = buf[at] as number;
      const seq = {
        trajectoryId: (buf[at + 1] as number) + groups * g,
        promptId: (buf[at + 2] as number) + groups,
      } as TrainingSequence;
      at += 3;
      for (const f of FIELDS) {
        seq[f] = Array.from(buf.subarray(at, at + t));
        at += t;
      }
      sequences.push(seq);
    }
    groups += rankGroups;
    at = end;
  }
  return {
    batch: {
      sequences,
      trajectoryIds: sequences.map((s) => s.trajectoryId),
      responsesPerPrompt: g,
      trajectories: groups * g,
    },
    metrics: combine(stats, groups),
    ...(shard.firstFailure ? { firstFailure: shard.firstFailure } : {}),
  };
}

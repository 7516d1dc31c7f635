import {
  createMeshGroups,
  type FsdpGroups,
  type ProcessGroup,
  planDeviceMesh,
} from '@rl2/parallel';
import { TrainersError } from '../errors.js';
import { type DataParallel, SINGLE_PROCESS } from './data-parallel.js';

/** The parallel sizes of a model section (`actor.*`, `critic.*`). */
export interface ParallelSizes {
  readonly ddp_size: number | null;
  readonly tp_size: number;
  readonly cp_size: number;
}

/**
 * Where this rank sits among the ranks a model is trained on, by RL2's meshes (see @rl2/parallel
 * `planDeviceMesh`): the data mesh (dp, cp, tp) and the model mesh (ddp, fsdp, tp).
 * - `data`: the dp axis. Its ranks take different micro-batches; step totals, losses and metrics
 *   are summed over it (the tp and cp ranks of one data slot compute the same loss).
 * - `replicas`: every rank holding the same parameter shards (all dp and cp ranks of this tp
 *   rank). Gradients are summed over it: cp ranks each hold the gradient of their own tokens.
 * With one tp and one cp rank both are the whole world.
 */
export interface RankLayout {
  readonly world: DataParallel;
  readonly data: DataParallel;
  readonly replicas: DataParallel;
  /** Tensor-parallel group (consecutive ranks), when tp_size > 1. */
  readonly tp?: ProcessGroup;
  /** Context-parallel group, when cp_size > 1. */
  readonly cp?: ProcessGroup;
  /** FSDP groups (shard over fsdp, replicate over ddp) when ddp_size is set and there are several ranks. */
  readonly fsdp?: FsdpGroups;
  /** True on cp rank 0: the rank whose loss and metrics count when they are summed over `replicas`. */
  readonly countsLoss: boolean;
  /** One line for the run's header, e.g. `TP(2) x CP(2) x DP(1)`; empty on one process. */
  readonly summary: string;
}

/**
 * Token budget of one packed micro-batch, RL2's max_length_per_dp: the micro-batch is split over
 * the cp ranks and its activations over tp, so it holds cp_size * tp_size * max_length_per_device
 * tokens. `key` names the section in the error of a sequence that does not fit.
 */
export function microBatchBudget(
  section: ParallelSizes & { readonly max_length_per_device: number },
  key: string,
): { budget: number; budgetKey: string } {
  const split = section.cp_size * section.tp_size;
  return {
    budget: split * section.max_length_per_device,
    budgetKey:
      split > 1 ? `${key}.cp_size*tp_size*max_length_per_device` : `${key}.max_length_per_device`,
  };
}

/** One process: every axis is the process itself. */
export const ONE_PROCESS: RankLayout = Object.freeze({
  world: SINGLE_PROCESS,
  data: SINGLE_PROCESS,
  replicas: SINGLE_PROCESS,
  countsLoss: true,
  summary: '',
});

/** A process group as the loop's DataParallel (closing is left to the world). */
function groupParallel(group: ProcessGroup): DataParallel {
  return {
    rank: group.rank,
    size: group.size,
    allReduceSum: (buf) => group.allReduce(buf, 'sum'),
    close: async () => {},
    group,
  };
}

/**
 * Lays out the world for one model section. `key` (e.g. `actor`) names the config keys in
 * errors: tp/cp sizes that need more processes than were started, or that do not divide them.
 */
export function planRankLayout(world: DataParallel, sizes: ParallelSizes, key: string): RankLayout {
  const { tp_size: tp, cp_size: cp, ddp_size: ddp } = sizes;
  const plain: RankLayout = {
    world,
    data: world,
    replicas: world,
    countsLoss: true,
    summary: world.size > 1 ? `data parallel over ${world.size} ranks` : '',
  };
  if (world.size === 1) {
    if (tp * cp > 1) {
      throw new TrainersError(
        'INVALID_ARGUMENT',
        `${key}.tp_size=${tp} x ${key}.cp_size=${cp} needs ${tp * cp} processes, this run has ` +
          `1; start it with rl2 launch --nproc-per-node ${tp * cp} -- rl2 ...`,
      );
    }
    return plain;
  }
  if (tp === 1 && cp === 1 && ddp === null) return plain;
  const group = world.group;
  if (!group)
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `${key}: tp_size, cp_size and ddp_size need a process group; this DataParallel has none`,
    );
  let mesh: ReturnType<typeof planDeviceMesh>;
  try {
    mesh = planDeviceMesh(world.size, world.rank, { ddp: ddp ?? 1, tp, cp });
  } catch (err) {
    throw new TrainersError(
      'INVALID_ARGUMENT',
      `${key}.tp_size=${tp}, ${key}.cp_size=${cp}, ${key}.ddp_size=${ddp} over ${world.size} processes: ${(err as Error).message}`,
    );
  }
  const groups = createMeshGroups(group, mesh);
  const tpRank = mesh.coords.tp;
  const replicaRanks = Array.from({ length: world.size / tp }, (_, i) => i * tp + tpRank);
  const parts = [
    tp > 1 ? `TP(${tp})` : '',
    cp > 1 ? `CP(${cp})` : '',
    `DP(${mesh.sizes.dp})`,
  ].filter(Boolean);
  return {
    world,
    data: tp * cp === 1 ? world : groupParallel(groups.dp),
    replicas: tp === 1 ? world : groupParallel(group.subgroup(replicaRanks, 'replicas')),
    ...(tp > 1 ? { tp: groups.tp } : {}),
    ...(cp > 1 ? { cp: groups.cp } : {}),
    ...(ddp !== null
      ? { fsdp: { fsdp: groups.fsdp, ...(mesh.sizes.ddp > 1 ? { ddp: groups.ddp } : {}) } }
      : {}),
    countsLoss: mesh.coords.cp === 0,
    summary:
      `${parts.join(' x ')} over ${world.size} ` +
      `ranks${ddp !== null ? `, FSDP over ${mesh.sizes.fsdp} (${key}.ddp_size=${ddp})` : ''}`,
  };
}

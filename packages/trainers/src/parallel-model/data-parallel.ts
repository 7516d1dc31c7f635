import { type ProcessGroup, initProcessGroup, readLaunchEnv } from '@rl2/parallel';

/**
 * What the training loop needs from data parallelism: its place among the ranks and a blocking
 * sum over them. Every rank calls `allReduceSum` with equally long buffers in the same order.
 */
export interface DataParallel {
  readonly rank: number;
  readonly size: number;
  /** Element-wise sum over the ranks; returns the summed buffer (may be `buf` itself). */
  allReduceSum(buf: Float32Array): Float32Array;
  /** Ends the connections (no-op on one process). */
  close(): Promise<void>;
  /** The world's process group, for sharded layouts (FSDP); absent on one process. */
  readonly group?: ProcessGroup;
}

/** One process: rank 0 of 1, sums are the identity. The loop's default. */
export const SINGLE_PROCESS: DataParallel = Object.freeze({
  rank: 0,
  size: 1,
  allReduceSum: (buf: Float32Array) => buf,
  close: async () => {},
});

/**
 * Data parallelism over the world the launcher started (`rl2 launch`, torchrun, Slurm, Open MPI,
 * PyTorchJob: see @rl2/parallel `readLaunchEnv`): one process is {@link SINGLE_PROCESS}, more
 * join the process group at MASTER_ADDR:MASTER_PORT (collectives on Gloo, or on Unix sockets / TCP
 * when its addon is not built; RL2_COLLECTIVES picks one).
 */
export async function openDataParallel(
  env: Record<string, string | undefined> = process.env,
): Promise<DataParallel> {
  const launchEnv = readLaunchEnv(env);
  if (launchEnv.worldSize === 1) return SINGLE_PROCESS;
  const world = await initProcessGroup({ env: launchEnv });
  return {
    rank: world.rank,
    size: world.size,
    allReduceSum: (buf) => world.allReduce(buf, 'sum'),
    close: () => world.close(),
    group: world,
  };
}

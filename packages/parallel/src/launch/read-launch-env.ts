import { ParallelError } from '../errors.js';
import { firstSlurmHost } from './first-slurm-host.js';

/** Which launcher's variables the rank layout was read from. */
export type LaunchSource = 'torchrun' | 'pytorchjob' | 'openmpi' | 'slurm' | 'single';

/** Where this process sits in the world, and where the ranks meet. */
export interface LaunchEnv {
  rank: number;
  worldSize: number;
  localRank: number;
  localWorldSize: number;
  /** Index of this node (GROUP_RANK / SLURM_NODEID / rank div localWorldSize). */
  nodeRank: number;
  masterAddr: string;
  masterPort: number;
  source: LaunchSource;
}

/** Default rendezvous port, as torchrun. */
export const DEFAULT_MASTER_PORT = 29500;

type Env = Record<string, string | undefined>;

function int(env: Env, key: string, min: number): number | undefined {
  const raw = env[key];
  if (raw === undefined || raw === '') return undefined;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min) {
    throw new ParallelError(
      'LAUNCH_ENV',
      `${key}="${raw}" must be an integer >= ${min}; fix the launcher environment.`,
    );
  }
  return v;
}

function required(env: Env, key: string, min: number, why: string): number {
  const v = int(env, key, min);
  if (v === undefined)
    throw new ParallelError(
      'LAUNCH_ENV',
      `${key} is not set but ${why}; set ${key} or unset the other variables.`,
    );
  return v;
}

/** Slurm's SLURM_TASKS_PER_NODE: "2(x3),1" -> tasks on the node with index `nodeId`. */
function slurmTasksOnNode(spec: string, nodeId: number): number | undefined {
  let node = 0;
  for (const part of spec.split(',')) {
    const m = /^(\d+)(?:\(x(\d+)\))?$/.exec(part.trim());
    if (!m) return undefined;
    const count = Number(m[2] ?? 1);
    if (nodeId < node + count) return Number(m[1]);
    node += count;
  }
  return undefined;
}

function masterPort(env: Env): number {
  const port = int(env, 'MASTER_PORT', 1) ?? DEFAULT_MASTER_PORT;
  if (port > 65535)
    throw new ParallelError(
      'LAUNCH_ENV',
      `MASTER_PORT="${env.MASTER_PORT}" is not a TCP port (1..65535).`,
    );
  return port;
}

function check(e: LaunchEnv, names: Names): LaunchEnv {
  const bad = (msg: string) =>
    new ParallelError('LAUNCH_ENV', `${e.source} environment is inconsistent: ${msg}`);
  if (e.worldSize < 1) throw bad(`${names.worldSize}=${e.worldSize} must be >= 1.`);
  if (e.rank >= e.worldSize)
    throw bad(`${names.rank}=${e.rank} must be < ${names.worldSize}=${e.worldSize}.`);
  if (e.localWorldSize < 1 || e.localWorldSize > e.worldSize) {
    throw bad(
      `${names.localWorldSize}=${e.localWorldSize} must be between 1 and ${names.worldSize}=${e.worldSize}.`,
    );
  }
  if (e.localRank >= e.localWorldSize) {
    throw bad(
      `${names.localRank}=${e.localRank} must be < ${names.localWorldSize}=${e.localWorldSize}.`,
    );
  }
  if (e.localRank > e.rank)
    throw bad(`${names.localRank}=${e.localRank} cannot exceed ${names.rank}=${e.rank}.`);
  return e;
}

/**
 * Read this process's rank layout from the environment of whichever launcher started it, so
 * users scale on what their cluster already runs. Precedence (first match wins):
 * 1. torchrun / `rl2 launch`: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK.
 * 2. Kubernetes PyTorchJob: RANK and WORLD_SIZE without LOCAL_RANK (one process per pod).
 * 3. Open MPI: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (MASTER_ADDR needed across nodes).
 * 4. Slurm srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID; MASTER_ADDR defaults to
 *    the first host of SLURM_JOB_NODELIST.
 * 5. Nothing set: a single process (rank 0 of 1).
 * MASTER_ADDR / MASTER_PORT always override (port default 29500). Inconsistent values throw
 * a `LAUNCH_ENV` error naming the variables.
 */
export function readLaunchEnv(env: Env = process.env): LaunchEnv {
  const port = masterPort(env);
  if (env.RANK !== undefined || env.WORLD_SIZE !== undefined || env.LOCAL_RANK !== undefined)
    return env.LOCAL_RANK === undefined ? fromPyTorchJob(env, port) : fromTorchrun(env, port);
  if (env.OMPI_COMM_WORLD_RANK !== undefined) return fromOpenMpi(env, port);
  if (env.SLURM_PROCID !== undefined) return fromSlurm(env, port);
  return { ...SINGLE, masterAddr: env.MASTER_ADDR || '127.0.0.1', masterPort: port };
}

type Names = Record<'rank' | 'worldSize' | 'localRank' | 'localWorldSize', string>;
type Layout = Pick<LaunchEnv, 'rank' | 'worldSize' | 'localRank' | 'localWorldSize' | 'nodeRank'>;

const TORCHRUN_NAMES: Names = {
  rank: 'RANK',
  worldSize: 'WORLD_SIZE',
  localRank: 'LOCAL_RANK',
  localWorldSize: 'LOCAL_WORLD_SIZE',
};
const SINGLE: Omit<LaunchEnv, 'masterAddr' | 'masterPort'> = {
  rank: 0,
  worldSize: 1,
  localRank: 0,
  localWorldSize: 1,
  nodeRank: 0,
  source: 'single',
};

/** The launch env of one launcher's layout, checked against the variables it came from. */
function launched(
  source: LaunchSource,
  layout: Layout,
  masterAddr: string | undefined,
  port: number,
  names: Names,
) {
  return check(
    { ...layout, masterAddr: masterAddr || '127.0.0.1', masterPort: port, source },
    names,
  );
}

/** Kubernetes PyTorchJob: RANK and WORLD_SIZE without LOCAL_RANK, one process per pod. */
function fromPyTorchJob(env: Env, port: number): LaunchEnv {
  const why = 'other torchrun variables are set';
  const rank = required(env, 'RANK', 0, why);
  const worldSize = required(env, 'WORLD_SIZE', 1, why);
  if (!env.MASTER_ADDR && worldSize > 1) {
    throw new ParallelError(
      'LAUNCH_ENV',
      `RANK and WORLD_SIZE are set (PyTorchJob style) but MASTER_ADDR is not; set MASTER_ADDR to rank 0's host.`,
    );
  }
  const layout = { rank, worldSize, localRank: 0, localWorldSize: 1, nodeRank: rank };
  return launched('pytorchjob', layout, env.MASTER_ADDR, port, TORCHRUN_NAMES);
}

/** torchrun / `rl2 launch`: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK. */
function fromTorchrun(env: Env, port: number): LaunchEnv {
  const why = 'other torchrun variables are set';
  const rank = required(env, 'RANK', 0, why);
  const worldSize = required(env, 'WORLD_SIZE', 1, why);
  const localRank = required(env, 'LOCAL_RANK', 0, why);
  const localWorldSize = int(env, 'LOCAL_WORLD_SIZE', 1) ?? worldSize;
  const nodeRank = int(env, 'GROUP_RANK', 0) ?? Math.floor(rank / localWorldSize);
  if (!env.MASTER_ADDR && localWorldSize < worldSize) {
    throw new ParallelError(
      'LAUNCH_ENV',
      `WORLD_SIZE=${worldSize} spans several nodes (LOCAL_WORLD_SIZE=${localWorldSize}) but MASTER_ADDR is not set.`,
    );
  }
  if (worldSize % localWorldSize !== 0) {
    throw new ParallelError(
      'LAUNCH_ENV',
      `torchrun environment is inconsistent: WORLD_SIZE=${worldSize} is not a multiple of LOCAL_WORLD_SIZE=${localWorldSize}.`,
    );
  }
  const layout = { rank, worldSize, localRank, localWorldSize, nodeRank };
  return launched('torchrun', layout, env.MASTER_ADDR, port, TORCHRUN_NAMES);
}

/** Open MPI: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE (MASTER_ADDR needed across nodes). */
function fromOpenMpi(env: Env, port: number): LaunchEnv {
  const why = 'OMPI_COMM_WORLD_RANK is set';
  const rank = required(env, 'OMPI_COMM_WORLD_RANK', 0, why);
  const worldSize = required(env, 'OMPI_COMM_WORLD_SIZE', 1, why);
  const localRank = int(env, 'OMPI_COMM_WORLD_LOCAL_RANK', 0) ?? 0;
  const localWorldSize = int(env, 'OMPI_COMM_WORLD_LOCAL_SIZE', 1) ?? 1;
  if (!env.MASTER_ADDR && localWorldSize < worldSize) {
    throw new ParallelError(
      'LAUNCH_ENV',
      `Open MPI job spans several nodes (OMPI_COMM_WORLD_SIZE=${worldSize}, ` +
        `OMPI_COMM_WORLD_LOCAL_SIZE=${localWorldSize}) but MASTER_ADDR is not set; pass -x ` +
        `MASTER_ADDR=<host of rank 0> to mpirun.`,
    );
  }
  const layout = {
    rank,
    worldSize,
    localRank,
    localWorldSize,
    nodeRank: Math.floor(rank / localWorldSize),
  };
  return launched('openmpi', layout, env.MASTER_ADDR, port, {
    rank: 'OMPI_COMM_WORLD_RANK',
    worldSize: 'OMPI_COMM_WORLD_SIZE',
    localRank: 'OMPI_COMM_WORLD_LOCAL_RANK',
    localWorldSize: 'OMPI_COMM_WORLD_LOCAL_SIZE',
  });
}

/** Slurm srun: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID; MASTER_ADDR from the node list. */
function fromSlurm(env: Env, port: number): LaunchEnv {
  const why = 'SLURM_PROCID is set (run under srun)';
  const rank = required(env, 'SLURM_PROCID', 0, why);
  const worldSize = required(env, 'SLURM_NTASKS', 1, why);
  const localRank = int(env, 'SLURM_LOCALID', 0) ?? 0;
  const nodeRank = int(env, 'SLURM_NODEID', 0) ?? 0;
  const perNode = env.SLURM_TASKS_PER_NODE
    ? slurmTasksOnNode(env.SLURM_TASKS_PER_NODE, nodeRank)
    : undefined;
  const localWorldSize = int(env, 'SLURM_NTASKS_PER_NODE', 1) ?? perNode ?? worldSize;
  let masterAddr = env.MASTER_ADDR;
  if (!masterAddr) {
    const list = env.SLURM_JOB_NODELIST ?? env.SLURM_NODELIST;
    if (list) masterAddr = firstSlurmHost(list);
    else if (localWorldSize < worldSize) {
      throw new ParallelError(
        'LAUNCH_ENV',
        'Slurm job spans several nodes but neither MASTER_ADDR nor SLURM_JOB_NODELIST is set.',
      );
    }
  }
  return launched(
    'slurm',
    { rank, worldSize, localRank, localWorldSize, nodeRank },
    masterAddr,
    port,
    {
      rank: 'SLURM_PROCID',
      worldSize: 'SLURM_NTASKS',
      localRank: 'SLURM_LOCALID',
      localWorldSize: 'SLURM_NTASKS_PER_NODE',
    },
  );
}

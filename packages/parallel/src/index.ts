// @rl2/parallel: torch.distributed-style multi-process training for TensorFlow.js on CPUs.
// Start ranks like torchrun, join them into process groups, lay a model out over them (RL2's
// meshes: data, ZeRO-3/FSDP, tensor, sequence and context parallelism) and plan its memory.
// Everything is on Float32Array and tfjs tensors; @rl2/trainers builds on it.

// Errors: a failed or interrupted rank stops every rank.
export { InterruptedError, ParallelError, RankFailedError } from './errors.js';
export type { ParallelErrorCode } from './errors.js';

// Launching: N ranks of a command (like torchrun), and reading the rank layout any launcher gave.
export { launch, rankEnv } from './launch/launch.js';
export type { LaunchOptions, LaunchResult } from './launch/launch.js';
export { readLaunchEnv } from './launch/read-launch-env.js';
export type { LaunchEnv, LaunchSource } from './launch/read-launch-env.js';
export { firstSlurmHost } from './launch/first-slurm-host.js';
export { freePort } from './launch/free-port.js';

// Process groups: blocking collectives of the world and its subgroups (worker thread +
// sockets), the same as Promises for event-loop code, and the one-process group.
export type {
  Collective,
  GroupSpec,
  PendingOp,
  ProcessGroup,
  ReduceOp,
} from './comm/collective.js';
export { initProcessGroup } from './comm/init-process-group.js';
export type { InitProcessGroupOptions, World } from './comm/init-process-group.js';
export { createSocketWorld } from './comm/socket-world.js';
export type { SocketWorld, SocketWorldOptions } from './comm/socket-world.js';
export type { Transport } from './comm/peer-mesh.js';
export { LocalProcessGroup } from './comm/local-process-group.js';

// Meshes: RL2's model mesh (ddp, fsdp, tp) and data mesh (dp, cp, tp) as process groups.
export { planDeviceMesh } from './mesh/device-mesh.js';
export type { DeviceMesh, MeshAxis, MeshSizes } from './mesh/device-mesh.js';
export { createMeshGroups } from './mesh/create-mesh-groups.js';

// ZeRO-3 / FSDP: flat parameter shards per unit, gathered on first read, gradients reduce-scattered.
export { Zero3Params } from './layout/zero3-params.js';
export type {
  FsdpGroups,
  FsdpNormOptions,
  Zero3Options,
  Zero3Unit,
} from './layout/zero3-params.js';
export type { FlatParamLayout } from './layout/flat-params.js';

// Tensor parallelism (Megatron): parallel linears, the f/g operators, vocab-split embedding and
// log-probs, and the HF-name rules that shard a whole decoder.
export {
  checkTensorParallelSizes,
  columnParallelLinear,
  copyToTensorParallel,
  reduceFromTensorParallel,
  rowParallelLinear,
  shardLinear,
  tensorParallelHeads,
} from './layout/tensor-parallel.js';
export type { ParallelLinearOptions, TensorParallelSizes } from './layout/tensor-parallel.js';
export {
  vocabParallelEmbedding,
  vocabParallelLogprobs,
  vocabRange,
} from './layout/vocab-parallel.js';
export {
  gatherTensorParallel,
  shardForTensorParallel,
  tensorParallelAxis,
  tensorParallelLinearFactory,
  tensorParallelRole,
  tensorParallelShape,
} from './layout/tensor-parallel-shards.js';
export type { TensorParallelRole } from './layout/tensor-parallel-shards.js';
export { shardFrozenForTensorParallel } from './layout/frozen-tensor-parallel.js';

// Sequence parallelism: tokens split over tp outside the tensor-parallel regions.
export {
  gatherSequence,
  reduceScatterSequence,
  splitSequence,
} from './layout/sequence-parallel.js';

// Context parallelism: zigzag split of a packed row, attention with K/V all-gathered.
export { planZigzag } from './layout/zigzag.js';
export type { ZigzagPlan } from './layout/zigzag.js';
export {
  allGatherContext,
  contextParallelAttention,
  contextParallelAttentionKernel,
  zigzagMerge,
  zigzagSplit,
} from './layout/context-parallel.js';
export type { TiledAttention } from './layout/context-parallel.js';

// Memory planning (`rl2 plan`).
export { countParameters } from './plan/count-parameters.js';
export type { DecoderConfig, ParameterCount } from './plan/count-parameters.js';
export { planMemory } from './plan/plan-memory.js';
export type { MemoryPlan, PlanMemoryOptions } from './plan/plan-memory.js';
export { formatMemoryPlan } from './plan/format-memory-plan.js';

export { InterruptedError, ParallelError, RankFailedError } from './errors.js';
export type { ParallelErrorCode } from './errors.js';
export { readLaunchEnv, DEFAULT_MASTER_PORT } from './launch/read-launch-env.js';
export type { LaunchEnv, LaunchSource } from './launch/read-launch-env.js';
export { firstSlurmHost } from './launch/first-slurm-host.js';
export { launch, rankEnv } from './launch/launch.js';
export { freePort } from './launch/free-port.js';
export type { LaunchOptions, LaunchResult } from './launch/launch.js';
export type { Collective, GroupSpec, PendingOp, ProcessGroup, ReduceOp } from './comm/collective.js';
export { createSocketWorld } from './comm/socket-world.js';
export type { SocketWorld, SocketWorldOptions } from './comm/socket-world.js';
export type { Transport } from './comm/peer-mesh.js';
export { initProcessGroup } from './comm/init-process-group.js';
export type { InitProcessGroupOptions, World } from './comm/init-process-group.js';
export { LocalProcessGroup } from './comm/local-process-group.js';
export { planDeviceMesh } from './mesh/device-mesh.js';
export type { DeviceMesh, MeshAxis, MeshSizes } from './mesh/device-mesh.js';
export { createMeshGroups } from './mesh/create-mesh-groups.js';
export {
  columnParallelLinear,
  copyToTensorParallel,
  gatherFromTensorParallel,
  reduceFromTensorParallel,
  rowParallelLinear,
  shardLinear,
  tensorParallelHeads,
} from './layout/tensor-parallel.js';
export { vocabParallelEmbedding, vocabParallelLogprobs, vocabRange } from './layout/vocab-parallel.js';
export { planZigzag } from './layout/zigzag.js';
export type { ZigzagPlan } from './layout/zigzag.js';
export { allGatherContext, contextParallelAttention, zigzagMerge, zigzagSplit } from './layout/context-parallel.js';
export { flattenParams, planFlatParams, shardOf, unflattenParams } from './layout/flat-params.js';
export type { FlatParamLayout } from './layout/flat-params.js';
export { FullyShardedParams } from './layout/fsdp.js';
export type { FsdpGroups, FsdpNormOptions, FsdpUnit } from './layout/fsdp.js';
export { adamwShardStep, createAdamWShardState } from './layout/adamw-shard.js';
export type { AdamWConfig, AdamWShardState } from './layout/adamw-shard.js';
export { countParameters } from './plan/count-parameters.js';
export type { DecoderConfig, ParameterCount } from './plan/count-parameters.js';
export { planMemory } from './plan/plan-memory.js';
export type { MemoryPlan, PlanMemoryOptions } from './plan/plan-memory.js';
export { formatMemoryPlan } from './plan/format-memory-plan.js';
export { gatherTensorParallel, shardForTensorParallel, tensorParallelAxis, tensorParallelLinearFactory, tensorParallelRole } from './layout/tensor-parallel-model.js';
export type { TensorParallelRole } from './layout/tensor-parallel-model.js';
export { contextParallelAttentionKernel } from './layout/context-parallel.js';
export { fsdpTrainStep } from './layout/fsdp-train-step.js';
export type { FsdpTrainStepOptions } from './layout/fsdp-train-step.js';
export { gatherSequence, reduceScatterSequence, splitSequence } from './layout/sequence-parallel.js';
export type { ParallelLinearOptions } from './layout/tensor-parallel.js';
export { Zero3Params } from './layout/zero3-params.js';
export type { Zero3Options, Zero3Unit } from './layout/zero3-params.js';
export { planUnits, shardSquares } from './layout/flat-params.js';

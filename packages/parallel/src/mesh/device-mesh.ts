import { ParallelError } from '../errors.js';

/** Requested parallel sizes; fsdp and dp follow from the world size. */
export interface MeshSizes {
  /** Replicas of the sharded model (ddp_size; 1 = ZeRO-3). */
  ddp?: number;
  /** Tensor-parallel ranks (Megatron column/row split). */
  tp?: number;
  /** Context-parallel ranks (the packed row split zigzag). */
  cp?: number;
}

/** Axes of the two meshes; every axis names the world ranks of this rank's group along it. */
export type MeshAxis = 'ddp' | 'fsdp' | 'tp' | 'dp' | 'cp';

/**
 * RL2's two meshes over one world, both row-major with tp innermost (so a tp group is
 * consecutive ranks, on one node whenever tp <= ranks per node):
 * - model mesh (ddp, fsdp, tp): rank = (ddp_i * fsdp + fsdp_i) * tp + tp_i, fsdp = W / (ddp*tp).
 *   Parameters are sharded over fsdp and replicated over ddp.
 * - data mesh (dp, cp, tp): rank = (dp_i * cp + cp_i) * tp + tp_i, dp = W / (cp*tp).
 *   dp ranks take different micro-batches; cp ranks split one packed row; tp ranks see the same row.
 */
export interface DeviceMesh {
  worldSize: number;
  rank: number;
  sizes: Record<MeshAxis, number>;
  /** This rank's coordinate along each axis. */
  coords: Record<MeshAxis, number>;
  /** World ranks of this rank's group along each axis, in group-rank order. */
  groups: Record<MeshAxis, number[]>;
}

function size(name: string, v: number | undefined): number {
  const s = v ?? 1;
  if (!Number.isInteger(s) || s < 1)
    throw new ParallelError('MESH', `${name}=${v} must be a positive integer.`);
  return s;
}

/** Lay out `worldSize` ranks by the RL2 mesh rules (W divisible by ddp*tp and by cp*tp). */
export function planDeviceMesh(worldSize: number, rank: number, sizes: MeshSizes = {}): DeviceMesh {
  const ddp = size('ddp', sizes.ddp);
  const tp = size('tp', sizes.tp);
  const cp = size('cp', sizes.cp);
  if (!Number.isInteger(worldSize) || worldSize < 1)
    throw new ParallelError('MESH', `world size ${worldSize} must be a positive integer.`);
  if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize)
    throw new ParallelError('MESH', `rank ${rank} is outside the world of ${worldSize}.`);
  if (worldSize % (ddp * tp) !== 0) {
    throw new ParallelError(
      'MESH',
      `world size ${worldSize} is not divisible by ddp*tp = ${ddp}*${tp} = ${ddp * tp}; choose ` +
        `ddp and tp whose product divides the number of processes.`,
    );
  }
  if (worldSize % (cp * tp) !== 0) {
    throw new ParallelError(
      'MESH',
      `world size ${worldSize} is not divisible by cp*tp = ${cp}*${tp} = ${cp * tp}; choose cp ` +
        `and tp whose product divides the number of processes.`,
    );
  }
  const fsdp = worldSize / (ddp * tp);
  const dp = worldSize / (cp * tp);
  const tpI = rank % tp;
  const fsdpI = Math.floor(rank / tp) % fsdp;
  const ddpI = Math.floor(rank / (tp * fsdp));
  const cpI = Math.floor(rank / tp) % cp;
  const dpI = Math.floor(rank / (tp * cp));
  const range = (n: number, f: (i: number) => number) => Array.from({ length: n }, (_, i) => f(i));
  return {
    worldSize,
    rank,
    sizes: { ddp, fsdp, tp, dp, cp },
    coords: { ddp: ddpI, fsdp: fsdpI, tp: tpI, dp: dpI, cp: cpI },
    groups: {
      tp: range(tp, (i) => rank - tpI + i),
      fsdp: range(fsdp, (i) => (ddpI * fsdp + i) * tp + tpI),
      ddp: range(ddp, (i) => (i * fsdp + fsdpI) * tp + tpI),
      cp: range(cp, (i) => (dpI * cp + i) * tp + tpI),
      dp: range(dp, (i) => (i * cp + cpI) * tp + tpI),
    },
  };
}

import { z } from 'zod';
import { option } from './option.js';

/**
 * How SFT, RM and DPO use several processes (`rl2 launch`): plain data parallelism, or RL2's
 * FSDP layout with gradients and AdamW state sharded over world / ddp_size ranks.
 */
export function parallelOptions() {
  return {
    ddp_size: option(
      z.number().int().positive().nullable(),
      null,
      'with several processes: null replicates gradients and AdamW state on every rank (data parallel); N shards them FSDP-style over world/N ranks, N replicas (1: ZeRO over all ranks)',
    ),
  };
}

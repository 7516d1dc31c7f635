import { z } from 'zod';
import { option } from './option.js';

/**
 * How SFT, RM, DPO and PPO models use several processes (`rl2 launch`): plain data parallelism,
 * RL2's FSDP layout with gradients and AdamW state sharded over world / (ddp_size * tp_size)
 * ranks, tensor parallelism (Megatron) and context parallelism (zigzag split packed rows).
 */
export function parallelOptions() {
  return {
    ddp_size: option(
      z.number().int().positive().nullable(),
      null,
      'with several processes: null replicates gradients and AdamW state on every rank (data ' +
        'parallel); N shards them FSDP-style over world/(N*tp_size) ranks, N replicas (1: ZeRO over all ranks)',
    ),
    tp_size: option(
      z.number().int().positive(),
      1,
      'tensor parallelism: q/k/v, gate/up column- and o/down row-parallel, embedding and LM ' +
        'head split by vocabulary over tp_size consecutive ranks; kv heads, heads, intermediate ' +
        'and vocab sizes must divide by it',
    ),
    cp_size: option(
      z.number().int().positive(),
      1,
      'context parallelism: each packed micro-batch split zigzag over cp_size ranks (K/V ' +
        'all-gathered in attention); a micro-batch holds up to cp_size*tp_size*max_length_per_device tokens',
    ),
  };
}

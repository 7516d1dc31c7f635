import { type FrozenMatrix, frozenRows } from '@rl2/engine';
import type { ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import { shardRange } from './tensor-parallel.js';
import { tensorParallelAxis } from './tensor-parallel-shards.js';

/**
 * This tp rank's shard of every frozen 16-bit matrix (a LoRA base kept as stored), split as
 * {@link shardForTensorParallel} splits its float32 twin: column projections and the embedding /
 * LM head on their rows, row projections (o_proj, down_proj) on their input columns (a strided
 * copy of the 16-bit words). Row shards are copies unless `view` (then views of the full bits,
 * which stay alive: for a caller that keeps the full model anyway). Keys are unchanged.
 */
export function shardFrozenForTensorParallel(
  frozen: ReadonlyMap<string, FrozenMatrix>,
  tp: Pick<ProcessGroup, 'rank' | 'size'>,
  { view = false }: { view?: boolean } = {},
): Map<string, FrozenMatrix> {
  const out = new Map<string, FrozenMatrix>();
  for (const [name, w] of frozen) {
    const axis = tensorParallelAxis(name);
    if (axis === undefined)
      throw new ParallelError(
        'LAYOUT',
        `shardFrozenForTensorParallel: "${name}" has no tensor-parallel split; only projections, ` +
          'the embedding and the LM head are kept in 16 bits',
      );
    const what = `${axis === 0 ? 'rows' : 'input columns'} of ${name}`;
    const [a, b] = shardRange(w.shape[axis], tp.rank, tp.size, what);
    out.set(name, axis === 0 ? rowShard(w, a, b - a, view) : columnShard(w, a, b - a));
  }
  return out;
}

function rowShard(w: FrozenMatrix, r0: number, n: number, view: boolean): FrozenMatrix {
  const rows = frozenRows(w, r0, n);
  return view ? rows : { ...rows, bits: rows.bits.slice() };
}

/** Columns c0 .. c0+n of every row of `w` [out, in], copied into [out, n]. */
function columnShard(w: FrozenMatrix, c0: number, n: number): FrozenMatrix {
  const [rows, cols] = w.shape;
  const bits = new Uint16Array(rows * n);
  for (let r = 0; r < rows; r++) bits.set(w.bits.subarray(r * cols + c0, r * cols + c0 + n), r * n);
  return { bits, dtype: w.dtype, shape: [rows, n] };
}

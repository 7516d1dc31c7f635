import { type FrozenMatrix, frozenLinear } from '@rl2/engine';
import * as tf from '@tensorflow/tfjs-core';
import type { ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import {
  columnParallelLinear,
  copyToTensorParallel,
  reduceFromTensorParallel,
  rowParallelLinear,
  shardRange,
} from './tensor-parallel.js';

/** How tensor parallelism treats one HF parameter. */
export type TensorParallelRole = 'column' | 'row' | 'vocab' | 'replicated';

/**
 * Megatron roles by HF module name (Llama / Qwen): q/k/v and gate/up are column-parallel,
 * o_proj and down_proj row-parallel, embed_tokens and lm_head split by vocabulary, the rest
 * (norms) replicated. `name` is a module (`model.layers.0.mlp.up_proj`) or a parameter name.
 */
export function tensorParallelRole(name: string): TensorParallelRole {
  const module = name.replace(/\.(weight|bias)$/, '');
  if (/\.(q_proj|k_proj|v_proj|gate_proj|up_proj)$/.test(module)) return 'column';
  if (/\.(o_proj|down_proj)$/.test(module)) return 'row';
  if (/(^|\.)(embed_tokens|lm_head)$/.test(module)) return 'vocab';
  return 'replicated';
}

/**
 * The axis tensor parallelism splits a parameter on: 0 for column weights and biases (output
 * rows) and for the embedding / LM head (vocabulary rows), 1 for row weights (input columns);
 * undefined when every tp rank holds it whole (row biases, norms, value head). A LoRA adapter
 * (PEFT's `<module>.lora_A.weight` [r, in], `<module>.lora_B.weight` [out, r]) is split as its
 * module's weight: a column layer's B on its output rows, a row layer's A on its input
 * columns; the other factor (r wide) is held whole.
 */
export function tensorParallelAxis(name: string): 0 | 1 | undefined {
  const lora = /^(.*)\.lora_([AB])\.weight$/.exec(name);
  if (lora) {
    const role = tensorParallelRole(lora[1]!);
    if (role === 'column' && lora[2] === 'B') return 0;
    if (role === 'row' && lora[2] === 'A') return 1;
    return undefined;
  }
  const role = tensorParallelRole(name);
  if (role === 'column' || role === 'vocab') return 0;
  if (role === 'row' && !name.endsWith('.bias')) return 1;
  return undefined;
}

/** A parameter's shape on each of `size` tp ranks from its full shape: its {@link tensorParallelAxis} divided. */
export function tensorParallelShape(name: string, full: readonly number[], size: number): number[] {
  const axis = tensorParallelAxis(name);
  return full.map((d, i) => (i === axis ? d / size : d));
}

const splitWhat = (name: string, axis: 0 | 1) =>
  tensorParallelRole(name) === 'vocab'
    ? `vocabulary rows of ${name} (pad the embedding to a multiple of tp)`
    : `${axis === 0 ? 'output' : 'input'} features of ${name}`;

/**
 * This tp rank's shard of every parameter (full tensors in, e.g. from a checkpoint): column
 * weights and biases split on the output rows, row weights on the input columns (their bias
 * stays whole), embedding and LM head on vocabulary rows, norms copied. Keys are unchanged.
 */
export function shardForTensorParallel(
  params: ReadonlyMap<string, tf.Tensor>,
  tp: Pick<ProcessGroup, 'rank' | 'size'>,
): Map<string, tf.Tensor> {
  const out = new Map<string, tf.Tensor>();
  for (const [name, t] of params) {
    const axis = tensorParallelAxis(name);
    if (axis === undefined) {
      out.set(name, t);
      continue;
    }
    const [a, b] = shardRange(t.shape[axis]!, tp.rank, tp.size, splitWhat(name, axis));
    const begin = t.shape.map((_, i) => (i === axis ? a : 0));
    const size = t.shape.map((d, i) => (i === axis ? b - a : d));
    out.set(name, tf.slice(t, begin, size));
  }
  return out;
}

/**
 * Inverse of {@link shardForTensorParallel} for one tensor held as host floats (a parameter
 * or an optimizer moment): the full tensor from every tp rank's shard, by an all-gather over
 * `tp`. A collective: every tp rank calls it for the same names in the same order. Tensors
 * held whole come back as they are, without communication.
 */
export function gatherTensorParallel(
  name: string,
  local: Float32Array,
  localShape: readonly number[],
  tp: ProcessGroup,
): { shape: number[]; data: Float32Array } {
  const axis = tensorParallelAxis(name);
  if (axis === undefined || tp.size === 1) return { shape: [...localShape], data: local };
  const gathered = tp.allGather(local); // rank-major: [tp, ...localShape]
  const shape = localShape.map((d, i) => (i === axis ? d * tp.size : d));
  if (axis === 0) return { shape, data: gathered };
  // axis 1 of [out, in/tp]: interleave the ranks' column blocks row by row
  const [rows, cols] = localShape as [number, number];
  const data = new Float32Array(gathered.length);
  for (let r = 0; r < tp.size; r++) {
    for (let o = 0; o < rows; o++)
      data.set(
        gathered.subarray((r * rows + o) * cols, (r * rows + o + 1) * cols),
        o * cols * tp.size + r * cols,
      );
  }
  return { shape, data };
}

/**
 * A linear-layer factory (the shape `@rl2/models` takes as `linear`): given a module name and
 * the tp-sharded parameters, returns column- or row-parallel forwards by {@link tensorParallelRole},
 * and a plain dense layer for anything else. `x` is `[N, in]` (replicated) or `[N, in/tp]` for row layers.
 * `forwardWith` adds a term inside the layer (LoRA, see `withExtra`). A weight in `frozen` (this
 * rank's 16-bit shard, see `shardFrozenForTensorParallel`) is multiplied by `frozenLinear`.
 */
export function tensorParallelLinearFactory(
  tp: ProcessGroup,
  frozen?: ReadonlyMap<string, FrozenMatrix>,
) {
  return (
    name: string,
    params: ReadonlyMap<string, tf.Tensor>,
  ): {
    name: string;
    forward: (x: tf.Tensor2D) => tf.Tensor2D;
    forwardWith: (x: tf.Tensor2D, extra: (local: tf.Tensor2D) => tf.Tensor2D) => tf.Tensor2D;
  } => {
    const product = localProduct(name, params, frozen);
    const bias = params.get(`${name}.bias`) as tf.Tensor1D | undefined;
    const role = tensorParallelRole(name);
    const weight = params.get(`${name}.weight`) as tf.Tensor2D;
    return {
      name,
      forward: (x) => {
        if (frozen?.has(`${name}.weight`)) return withExtra(role, x, product, bias, undefined, tp);
        if (role === 'column') return columnParallelLinear(x, weight, bias, tp) as tf.Tensor2D;
        if (role === 'row') return rowParallelLinear(x, weight, bias, tp) as tf.Tensor2D;
        const y = tf.matMul(x, weight, false, true);
        return (bias ? tf.add(y, bias) : y) as tf.Tensor2D;
      },
      forwardWith: (x, extra) => withExtra(role, x, product, bias, extra, tp),
    };
  };
}

/** x W_i^T with this rank's weight shard: a float32 parameter, or a frozen 16-bit matrix. */
function localProduct(
  name: string,
  params: ReadonlyMap<string, tf.Tensor>,
  frozen: ReadonlyMap<string, FrozenMatrix> | undefined,
): (x: tf.Tensor2D) => tf.Tensor2D {
  const bits = frozen?.get(`${name}.weight`);
  if (bits) return (x) => frozenLinear(x, bits);
  const weight = params.get(`${name}.weight`) as tf.Tensor2D | undefined;
  if (!weight)
    throw new ParallelError(
      'LAYOUT',
      `tensorParallelLinearFactory: parameter "${name}.weight" is missing from the sharded ` +
        `map; shard the full map with shardForTensorParallel first.`,
    );
  return (x) => tf.matMul(x, weight, false, true) as tf.Tensor2D;
}

/**
 * A parallel linear with `extra` (e.g. LoRA's s B A x, its factors sharded by
 * {@link tensorParallelAxis}) added to this rank's product, inside the conjugate operators:
 * column: f(x) W_i^T + extra(f(x)) (one all-reduce of the input gradient for both terms; the
 * gradient of the whole A is then each rank's part: sum it over tp); row: g(x_i W_i^T +
 * extra(x_i)), the partial sums of both reduced at once (B's gradient likewise a part).
 */
function withExtra(
  role: TensorParallelRole,
  x: tf.Tensor2D,
  product: (x: tf.Tensor2D) => tf.Tensor2D,
  bias: tf.Tensor1D | undefined,
  extra: ((local: tf.Tensor2D) => tf.Tensor2D) | undefined,
  tp: ProcessGroup,
): tf.Tensor2D {
  const plus = (input: tf.Tensor2D) =>
    extra ? (tf.add(product(input), extra(input)) as tf.Tensor2D) : product(input);
  const y =
    role === 'column'
      ? plus(copyToTensorParallel(x, tp))
      : role === 'row'
        ? reduceFromTensorParallel(plus(x), tp)
        : plus(x);
  return (bias ? tf.add(y, bias) : y) as tf.Tensor2D;
}

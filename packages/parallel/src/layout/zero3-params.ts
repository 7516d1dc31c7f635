import * as tf from '@tensorflow/tfjs-core';
import type { PendingOp, ProcessGroup } from '../comm/collective.js';
import { ParallelError } from '../errors.js';
import { readsOnDevice, unaryCustomGrad, valuesOf } from './custom-grad.js';
import {
  type FlatParamLayout,
  flattenParams,
  planUnits,
  shardOf,
  shardSquares,
} from './flat-params.js';

/** The groups FSDP works over: shard over `fsdp`, replicate over `ddp` (size 1 = ZeRO-3). */
export interface FsdpGroups {
  fsdp: ProcessGroup;
  ddp?: ProcessGroup;
}

/** How `gradNorm` adds up the norm when the units hold tensor-parallel shards. */
export interface FsdpNormOptions {
  /** Weight of each parameter's squared norm (default 1). */
  weightOf?: (name: string) => number;
  /** A further group whose sums are added (the tp group). */
  across?: ProcessGroup;
}

/** A ZeRO-3 unit: its flat layout and this rank's shard, the variable an optimizer updates. */
export interface Zero3Unit {
  name: string;
  layout: FlatParamLayout;
  shard: tf.Variable;
}

/** Options of {@link Zero3Params.fromFull}. */
export interface Zero3Options {
  /**
   * Called with a unit's full flat gradient (this rank's share) before it is reduce-scattered,
   * e.g. to sum over tp the slices of tensors each tp rank only holds part of the gradient of.
   */
  beforeReduce?: (flatGrad: Float32Array, layout: FlatParamLayout) => void;
}

/**
 * ZeRO stage 3 over tfjs autodiff (FSDP with the parameters sharded too,
 * https://arxiv.org/abs/1910.02054): every unit (e.g. a decoder layer) lives as one flat shard
 * variable per rank, 1/fsdp of its elements. A pass (one forward, and its backward) reads the
 * parameters from `passLookup()`: `get(name)` all-gathers the unit the first time the pass
 * reads one of its tensors (and starts gathering the next unit, so it overlaps compute) through
 * a differentiable op whose gradient reduce-scatters the unit's full gradient over fsdp
 * (all-reduced over ddp): `tf.variableGrads` over the shards then yields each rank's shard of
 * the globally summed gradient. Every rank of the groups must run the same passes in the same
 * order (pad with idle passes). Call `invalidate()` after the shards change.
 *
 * On a device backend (webgpu: a read inside a pass would wait for the device) the gathers move
 * out of the pass: `refresh()` reads every shard asynchronously and all-gathers them into host copies
 * before the passes (after each `invalidate()`), a pass uploads a unit from its copy, and the
 * backward keeps each unit's full gradient on the device (summed over the step's passes) for
 * `settleGrads` to reduce-scatter after them. Parameters and optimizer state stay sharded on
 * the device; the host holds the gathered parameters.
 */
export class Zero3Params {
  readonly units: Zero3Unit[];
  private readonly unitIndex = new Map<string, number>();
  private readonly prefetched = new Map<
    number,
    { op: PendingOp<Float32Array>; generation: number }
  >();
  private generation = 0;
  /** Device backends: each unit's gathered values on the host and the generation they are of. */
  private readonly hostFlats = new Map<number, { data: Float32Array; generation: number }>();
  /** Device backends: each unit's full gradient of the step's passes so far, on the device. */
  private readonly deviceGrads = new Map<number, tf.Tensor1D>();

  private constructor(
    units: Zero3Unit[],
    readonly groups: FsdpGroups,
    private readonly options: Zero3Options,
  ) {
    this.units = units;
    units.forEach((u, i) => {
      for (const n of u.layout.names) this.unitIndex.set(n, i);
    });
  }

  /** The parameters of one pass by HF name, each unit gathered on first read (and held for the pass). */
  passLookup(): ReadonlyMap<string, tf.Tensor> {
    return new GatheringMap(this);
  }

  /** Shards full tensors (identical on every rank, e.g. a loaded checkpoint) into units; the inputs are left alone. */
  static fromFull(
    full: ReadonlyMap<string, tf.Tensor>,
    groups: FsdpGroups,
    unitOf: (name: string) => string,
    options: Zero3Options = {},
  ): Zero3Params {
    const params = Object.fromEntries(full);
    const units = planUnits(params, unitOf, groups.fsdp.size).map(({ name, layout }) => {
      if (readsOnDevice())
        return { name, layout, shard: deviceShard(params, layout, groups.fsdp.rank) };
      const flat = flattenParams(
        Object.fromEntries(layout.names.map((n) => [n, params[n]!])),
        layout,
      );
      return {
        name,
        layout,
        shard: tf.tidy(() =>
          tf.variable(tf.tensor1d(shardOf(flat, layout, groups.fsdp.rank)), true),
        ),
      };
    });
    return new Zero3Params(units, groups, options);
  }

  /** The shard variables by unit name, as an optimizer takes them. */
  get shards(): Record<string, tf.Variable> {
    return Object.fromEntries(this.units.map((u) => [u.name, u.shard]));
  }

  /** Names of every parameter, in unit order. */
  names(): string[] {
    return this.units.flatMap((u) => u.layout.names);
  }

  /** The shards changed (an optimizer step, a loaded checkpoint): gathered copies and prefetches are stale. */
  invalidate(): void {
    this.generation += 1;
  }

  /** Index of the unit holding `name`. */
  unitOf(name: string): number | undefined {
    return this.unitIndex.get(name);
  }

  private flatOf(i: number, shard: tf.Tensor = this.units[i]!.shard): Float32Array {
    if (readsOnDevice()) return this.hostFlat(i);
    const pending = this.prefetched.get(i);
    this.prefetched.delete(i);
    if (pending) {
      const data = pending.op.wait(); // every rank started it at the same point: always waited for
      if (pending.generation === this.generation) return data;
    }
    return this.groups.fsdp.allGather(valuesOf(shard));
  }

  /** Starts gathering unit `i` (unless it is already on its way); `gatherUnit(i)` picks it up. */
  prefetch(i: number): void {
    if (readsOnDevice()) return; // refresh() gathered every unit
    if (i >= this.units.length || this.prefetched.has(i)) return;
    this.prefetched.set(i, {
      op: this.groups.fsdp.iallGather(valuesOf(this.units[i]!.shard)),
      generation: this.generation,
    });
  }

  /**
   * Unit `i`'s tensors for a pass, differentiable w.r.t. its shard (see the class); `shard` is
   * the shard variable or the copy a recomputed layer saved of it.
   */
  gatherUnit(i: number, shard: tf.Tensor = this.units[i]!.shard): Map<string, tf.Tensor> {
    const { layout } = this.units[i]!;
    const { fsdp, ddp } = this.groups;
    const op = unaryCustomGrad(() => ({
      value: tf.tensor1d(this.flatOf(i, shard)),
      gradFunc: (dy) => {
        if (readsOnDevice()) return this.keepDeviceGrad(i, dy as tf.Tensor1D);
        const g = valuesOf(dy);
        this.options.beforeReduce?.(g, layout);
        const shard = fsdp.reduceScatter(g, 'sum');
        if (ddp && ddp.size > 1) ddp.allReduce(shard, 'sum');
        return tf.tensor1d(shard);
      },
    }));
    const flat = op(shard);
    return new Map(
      layout.names.map((n, k) => {
        const shape = layout.shapes[k]!;
        return [
          n,
          tf.reshape(
            tf.slice(flat, [layout.offsets[k]!], [shape.reduce((a, b) => a * b, 1)]),
            shape,
          ),
        ];
      }),
    );
  }

  /** Full tensors of every parameter (not differentiable), e.g. to save or to generate with. A collective. */
  gatherAll(): Map<string, tf.Tensor> {
    const out = new Map<string, tf.Tensor>();
    this.units.forEach((u, i) => {
      const flat = this.flatOf(i);
      u.layout.names.forEach((n, k) => {
        const shape = u.layout.shapes[k]!;
        const at = u.layout.offsets[k]!;
        out.set(n, tf.tensor(flat.slice(at, at + shape.reduce((a, b) => a * b, 1)), shape));
      });
    });
    return out;
  }

  /**
   * Per-parameter full values of shard-shaped buffers by unit name (optimizer moments). A
   * collective over the units `byUnit` holds, which must be the same on every rank (an
   * optimizer has moments for the units that had gradients, everywhere alike).
   */
  gatherShardValues(
    byUnit: Readonly<Record<string, Float32Array>>,
  ): Record<string, { shape: number[]; data: Float32Array }> {
    const out: Record<string, { shape: number[]; data: Float32Array }> = {};
    for (const u of this.units) {
      const shard = byUnit[u.name];
      if (!shard) continue;
      if (shard.length !== u.layout.shardSize)
        throw new ParallelError(
          'INVALID_ARGUMENT',
          `unit "${u.name}": ${shard.length} shard values, its shards hold ${u.layout.shardSize}.`,
        );
      const flat = this.groups.fsdp.allGather(shard);
      u.layout.names.forEach((n, k) => {
        const shape = u.layout.shapes[k]!;
        const at = u.layout.offsets[k]!;
        out[n] = { shape: [...shape], data: flat.slice(at, at + shape.reduce((a, b) => a * b, 1)) };
      });
    }
    return out;
  }

  /** This rank's shard of each unit from per-parameter full values (missing ones are zeros). No communication. */
  shardValues(
    full: Readonly<Record<string, Float32Array | undefined>>,
  ): Record<string, Float32Array> {
    return Object.fromEntries(
      this.units.map((u) => {
        const flat = new Float32Array(u.layout.paddedNumel);
        u.layout.names.forEach((n, k) => {
          const v = full[n];
          if (v) flat.set(v, u.layout.offsets[k]!);
        });
        return [u.name, shardOf(flat, u.layout, this.groups.fsdp.rank)];
      }),
    );
  }

  /**
   * Device backends: brings the host copies of the gathered units up to date (every shard read
   * asynchronously, then all-gathered), unless they are; call before passes, after construction
   * and after each `invalidate()`. A collective (every rank calls it at the same point); does
   * nothing on host backends.
   */
  async refresh(): Promise<void> {
    if (!readsOnDevice()) return;
    for (const [i, u] of this.units.entries()) {
      if (this.hostFlats.get(i)?.generation === this.generation) continue;
      const local = Float32Array.from(await u.shard.data());
      this.hostFlats.set(i, {
        data: this.groups.fsdp.allGather(local),
        generation: this.generation,
      });
    }
  }

  private hostFlat(i: number): Float32Array {
    const held = this.hostFlats.get(i);
    if (held?.generation === this.generation) return held.data;
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `unit "${this.units[i]!.name}": on the ${tf.getBackend()} backend the gathered parameters ` +
        'are read before the passes: await zero3.refresh() after construction and after each invalidate().',
    );
  }

  /** The backward's gradient of unit `i` on a device backend: kept (summed) for `settleGrads`; the shard's is zero meanwhile. */
  private keepDeviceGrad(i: number, dy: tf.Tensor1D): tf.Tensor {
    const prev = this.deviceGrads.get(i);
    this.deviceGrads.set(i, tf.keep(prev ? tf.add(prev, dy) : tf.clone(dy)) as tf.Tensor1D);
    prev?.dispose();
    return tf.zeros([this.units[i]!.layout.shardSize]);
  }

  /**
   * Device backends, after the step's passes: each unit's full gradient they kept read
   * asynchronously, reduce-scattered over fsdp (all-reduced over ddp, `beforeReduce` first) and
   * added to its shard's gradient in `grads` (by unit name; consumed, the new sums returned).
   * A collective, in unit order; returns `grads` as they are on host backends.
   */
  async settleGrads(grads: Record<string, tf.Tensor>): Promise<Record<string, tf.Tensor>> {
    if (this.deviceGrads.size === 0) return grads;
    const { fsdp, ddp } = this.groups;
    const out = { ...grads };
    for (const [i, u] of this.units.entries()) {
      const full = this.deviceGrads.get(i);
      if (!full) continue;
      this.deviceGrads.delete(i);
      const g = Float32Array.from(await full.data());
      full.dispose();
      this.options.beforeReduce?.(g, u.layout);
      const shard = fsdp.reduceScatter(g, 'sum');
      if (ddp && ddp.size > 1) ddp.allReduce(shard, 'sum');
      const prev = out[u.name];
      out[u.name] = prev ? tf.tidy(() => tf.add(prev, tf.tensor1d(shard))) : tf.tensor1d(shard);
      prev?.dispose();
    }
    return out;
  }

  /**
   * The global L2 norm of gradients held as shards (by unit name): squares summed over this
   * rank's shards, all-reduced over fsdp (ddp replicas hold the same shards), weighted and
   * summed over tp as {@link FsdpNormOptions} says. A collective.
   */
  async gradNorm(
    grads: Readonly<Record<string, tf.Tensor>>,
    options: FsdpNormOptions = {},
  ): Promise<number> {
    let sq = 0;
    for (const u of this.units) {
      const g = grads[u.name];
      if (g) sq += shardSquares(await g.data(), u.layout, this.groups.fsdp.rank, options.weightOf);
    }
    const total = this.groups.fsdp.allReduce(Float32Array.of(sq), 'sum')[0]!;
    return Math.sqrt(
      options.across && options.across.size > 1
        ? options.across.allReduce(Float32Array.of(total), 'sum')[0]!
        : total,
    );
  }
}

/**
 * One pass's parameters: `get(name)` gathers the unit on first read and holds it for the pass
 * (again if a scope disposed it), starting to gather the next unit not held yet; `has`, `size`
 * and `keys` answer by name without communication.
 */
class GatheringMap extends Map<string, tf.Tensor> {
  private readonly held = new Map<number, Map<string, tf.Tensor>>();
  /** Units handed to recomputed layers in this pass (their backward gathers them again). */
  private readonly sourced = new Set<number>();

  /**
   * For a recomputed layer (@rl2/models `LayerParamSource`): the shard stands for the unit
   * between forward and backward; each run of the layer gathers it (the forward prefetching
   * the next unit, the backward the previous recomputed one) and frees it with the layer's
   * intermediates, so only one layer is held in full at a time.
   */
  layerSource(
    names: string[],
  ):
    | { inputs: tf.Tensor[]; open(inputs: tf.Tensor[]): ReadonlyMap<string, tf.Tensor> }
    | undefined {
    const i = this.owner.unitOf(names[0] ?? '');
    if (i === undefined || names.some((n) => this.owner.unitOf(n) !== i)) return undefined;
    this.sourced.add(i);
    let runs = 0;
    return {
      inputs: [this.owner.units[i]!.shard],
      open: (inputs) => {
        const gathered = this.owner.gatherUnit(i, inputs[0]);
        if (runs++ === 0) this.owner.prefetch(i + 1);
        else if (this.sourced.has(i - 1)) this.owner.prefetch(i - 1);
        return gathered;
      },
    };
  }

  constructor(private readonly owner: Zero3Params) {
    super();
  }
  private alive(i: number): Map<string, tf.Tensor> | undefined {
    const h = this.held.get(i);
    return h && ![...h.values()].some((t) => t.isDisposed) ? h : undefined;
  }
  override get(name: string): tf.Tensor | undefined {
    const i = this.owner.unitOf(name);
    if (i === undefined) return undefined;
    let h = this.alive(i);
    if (!h) {
      h = this.owner.gatherUnit(i);
      this.held.set(i, h);
      if (!this.alive(i + 1)) this.owner.prefetch(i + 1);
    }
    return h.get(name);
  }
  override has(name: string): boolean {
    return this.owner.unitOf(name) !== undefined;
  }
  override get size(): number {
    return this.owner.names().length;
  }
  override keys(): MapIterator<string> {
    return this.owner.names()[Symbol.iterator]() as MapIterator<string>;
  }
}

/** Rank `rank`'s shard of a unit built from full device tensors with tensor ops (no read back). */
function deviceShard(
  params: Record<string, tf.Tensor>,
  layout: FlatParamLayout,
  rank: number,
): tf.Variable {
  return tf.tidy(() => {
    const parts = layout.names.map((n) => tf.reshape(params[n]!, [-1]));
    if (layout.paddedNumel > layout.numel)
      parts.push(tf.zeros([layout.paddedNumel - layout.numel]));
    const flat = tf.concat(parts);
    return tf.variable(tf.slice(flat, [rank * layout.shardSize], [layout.shardSize]), true);
  });
}

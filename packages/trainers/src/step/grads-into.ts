import * as tf from '@tensorflow/tfjs-core';

/** The parts of a tfjs 4.22 tape node this reads (internal, stable since 1.x). */
interface TapeNode {
  inputs: Record<string, tf.Tensor>;
  gradient?: (dys: tf.Tensor[]) => Record<string, () => tf.Tensor>;
}

/**
 * `tf.variableGrads(f, varList)` whose gradients come out already added to `running` (gradients
 * by variable name from earlier micro-batches; each is consumed). Added after the backward, the
 * micro-batch's own gradients would all be alive next to the running sums: two full gradient sets
 * at 2.3 GB each for Qwen3-0.6B. Here the gradient thunk that first reaches a variable in the
 * backward adds its result into that variable's running sum (in place when the sum owns a
 * float32 array, as on the cpu and native backends) and frees it, so the backward carries one
 * set: the running sums, each replaced by the new total as the backward reaches it.
 */
export function variableGradsInto(
  f: () => tf.Scalar,
  varList: readonly tf.Variable[],
  running: ReadonlyMap<string, tf.Tensor>,
): { value: tf.Scalar; grads: Record<string, tf.Tensor> } {
  const pending = new Map<number, tf.Tensor>();
  for (const v of varList) {
    const sum = running.get(v.name);
    if (sum) pending.set(v.id, sum);
  }
  const engine = tf.engine() as unknown as { state: { activeTape: TapeNode[] | null } };
  const { value, grads } = tf.variableGrads(() => {
    const y = f();
    // the forward's tape is complete: route the variables' first gradients into the sums
    if (pending.size > 0) for (const node of engine.state.activeTape ?? []) seed(node, pending);
    return y;
  }, varList as tf.Variable[]);
  // a variable the backward never reached keeps its running sum
  for (const v of varList) {
    const sum = pending.get(v.id);
    if (!sum) continue;
    const g = grads[v.name];
    grads[v.name] = g ? addInto(sum, g, []) : sum;
  }
  return { value, grads };
}

/** Wraps `node`'s gradient so its thunks for pending variables return the running sum plus dx. */
function seed(node: TapeNode, pending: Map<number, tf.Tensor>): void {
  const gradient = node.gradient;
  const names = Object.keys(node.inputs).filter((k) => pending.has(node.inputs[k]!.id));
  if (!gradient || names.length === 0) return;
  node.gradient = (dys) => {
    const thunks = gradient(dys);
    const out = { ...thunks };
    for (const name of names) {
      const id = node.inputs[name]!.id;
      const thunk = thunks[name];
      if (!thunk) continue;
      out[name] = () => {
        const dx = thunk();
        const sum = pending.get(id);
        if (!sum) return dx; // a later read of the same variable: tfjs adds it as usual
        pending.delete(id);
        return addInto(sum, dx, dys);
      };
    }
    return out;
  };
}

/**
 * `sum + dx`, written over `sum`'s own array when it alone holds a float32 array on a cpu-style
 * backend (a new tensor otherwise, `sum` freed); `dx` is freed unless the tape still holds it.
 */
function addInto(sum: tf.Tensor, dx: tf.Tensor, dys: readonly tf.Tensor[]): tf.Tensor {
  let out: tf.Tensor;
  const values = ownF32Array(sum);
  if (values && dx.dtype === 'float32' && dx.size === sum.size) {
    const d = dx.dataSync() as Float32Array;
    for (let i = 0; i < values.length; i++) values[i]! += d[i]!;
    out = sum;
  } else {
    out = tf.add(sum, dx);
    sum.dispose();
  }
  if (dx !== out && !dys.includes(dx) && !dx.kept) dx.dispose();
  return out;
}

/** The parts of tfjs-backend-cpu's MathBackendCPU (and the native backend) this reads. */
interface CpuStyleBackend {
  refCount(dataId: object): number;
  data: { get(dataId: object): { values?: unknown } | undefined };
}

/** `t`'s Float32Array when `t` alone holds it on a cpu-style backend (safe to write in place). */
function ownF32Array(t: tf.Tensor): Float32Array | undefined {
  const backend = tf.backend() as unknown as Partial<CpuStyleBackend>;
  if (t.dtype !== 'float32' || typeof backend.refCount !== 'function') return undefined;
  if (backend.refCount(t.dataId) !== 1) return undefined;
  const values = backend.data?.get(t.dataId)?.values;
  return values instanceof Float32Array && values.length === t.size ? values : undefined;
}

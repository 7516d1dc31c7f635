import * as tf from '@tensorflow/tfjs-core';

/**
 * The per-bin loss and metric scalars of one step, held on the device until the step reads them
 * all in one transfer (`readStepSums`): a GPU step never waits on a read between its bins.
 */
export class StepSums {
  readonly losses: tf.Scalar[] = [];
  readonly metrics = new Map<string, tf.Scalar[]>();

  /** Takes ownership of `loss` and of each metric. */
  add(loss: tf.Scalar, metrics?: Readonly<Record<string, tf.Scalar | undefined>>): void {
    this.losses.push(loss);
    for (const [k, m] of Object.entries(metrics ?? {})) {
      if (!m) continue;
      const list = this.metrics.get(k) ?? [];
      list.push(m);
      this.metrics.set(k, list);
    }
  }
}

/**
 * Reads every scalar of `sums` in one asynchronous transfer, frees them, and adds each list up
 * in double precision in bin order: the loss and each metric summed over the step's bins.
 */
export async function readStepSums(
  sums: StepSums,
): Promise<{ loss: number; metrics: Record<string, number> }> {
  const lists: tf.Scalar[][] = [sums.losses, ...sums.metrics.values()];
  const all = lists.flat();
  const values = all.length > 0 ? await readAll(all) : new Float32Array(0);
  tf.dispose(all);
  let at = 0;
  const total = (list: readonly tf.Scalar[]) => {
    let s = 0;
    for (let i = 0; i < list.length; i++) s += values[at++]!;
    return s;
  };
  const loss = total(sums.losses);
  const metrics: Record<string, number> = {};
  for (const [k, list] of sums.metrics) metrics[k] = total(list);
  return { loss, metrics };
}

async function readAll(scalars: readonly tf.Scalar[]): Promise<Float32Array> {
  const stacked = tf.tidy(() => tf.stack(scalars.map((s) => tf.reshape(s, []))));
  const values = (await stacked.data()) as Float32Array;
  stacked.dispose();
  return values;
}

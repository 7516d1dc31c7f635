import * as tf from '@tensorflow/tfjs-core';
import type { NamedGrads } from '../optim/clip-grad-norm.js';
import { variableGradsInto } from './grads-into.js';
import type { Objective } from './objective.js';
import type { PackedBin, StepTotals } from '../bins/pack-bins.js';
import { readStepSums, StepSums } from './step-sums.js';

/** Loss and metrics of a step or an evaluation: sums over bins of already-normalised shares. */
export interface StepOutcome {
  readonly loss: number;
  readonly metrics: Record<string, number>;
}

/**
 * Gradient accumulation over the micro-batches of one step. Each bin's loss is already
 * divided by the step's global totals, so the summed gradients are those of the global mean
 * loss, whatever the packing (RL2's global-mean scaling). The sums are kept in one set of
 * gradients: each bin's backward adds into it as it goes (`variableGradsInto`). The bins'
 * losses and metrics stay on the device until the end, then come back in one read.
 */
export async function accumulateGradients<P>(
  bins: readonly PackedBin[],
  totals: StepTotals,
  objective: Objective<P>,
  params: Readonly<Record<string, tf.Variable>>,
): Promise<StepOutcome & { grads: NamedGrads }> {
  const varList = Object.values(params);
  let running = new Map<string, tf.Tensor>(); // by variable name
  const sums = new StepSums();
  for (const bin of bins) {
    const prepared = objective.prepare?.(bin);
    let binMetrics: Readonly<Record<string, tf.Scalar | undefined>> = {};
    const { value, grads } = variableGradsInto(
      () => {
        const out = objective.loss(bin, totals, prepared);
        binMetrics = out.metrics;
        for (const m of Object.values(binMetrics)) if (m) tf.keep(m); // past the gradient's scope
        return bin.idle ? tf.mul(out.loss, 0) : out.loss; // an idle pass only keeps the ranks in step
      },
      varList,
      running,
    );
    if (prepared !== undefined) objective.release?.(prepared);
    sums.add(value, bin.idle ? undefined : binMetrics);
    if (bin.idle) tf.dispose(Object.values(binMetrics).filter((m) => m !== undefined));
    running = new Map(Object.entries(grads));
  }
  const grads: NamedGrads = {};
  for (const [name, v] of Object.entries(params)) {
    const g = running.get(v.name);
    if (g) grads[name] = g;
  }
  return { ...(await readStepSums(sums)), grads };
}

/** The same sums without gradients, for validation. */
export async function evaluateBins<P>(
  bins: readonly PackedBin[],
  totals: StepTotals,
  objective: Objective<P>,
): Promise<StepOutcome> {
  const sums = new StepSums();
  for (const bin of bins) {
    const prepared = objective.prepare?.(bin);
    // tidy: the objective's intermediates (layouts, log-probs) go with the bin
    const kept = tf.tidy(() => {
      const out = objective.loss(bin, totals, prepared);
      return { loss: out.loss, metrics: out.metrics as Record<string, tf.Scalar> };
    });
    if (prepared !== undefined) objective.release?.(prepared);
    if (bin.idle) tf.dispose([kept.loss, ...Object.values(kept.metrics)]);
    else sums.add(kept.loss, kept.metrics);
  }
  return readStepSums(sums);
}

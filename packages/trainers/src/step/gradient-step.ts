import * as tf from '@tensorflow/tfjs-core';
import type { NamedGrads } from '../optim/clip-grad-norm.js';
import { variableGradsInto } from './grads-into.js';
import type { Objective } from './objective.js';
import type { PackedBin, StepTotals } from '../bins/pack-bins.js';

/** Loss and metrics of a step or an evaluation: sums over bins of already-normalised shares. */
export interface StepOutcome {
  readonly loss: number;
  readonly metrics: Record<string, number>;
}

function addMetrics(
  into: Record<string, number>,
  metrics: Readonly<Record<string, number | undefined>>,
): void {
  for (const [k, v] of Object.entries(metrics)) if (v !== undefined) into[k] = (into[k] ?? 0) + v;
}

/**
 * Gradient accumulation over the micro-batches of one step. Each bin's loss is already
 * divided by the step's global totals, so the summed gradients are those of the global mean
 * loss, whatever the packing (RL2's global-mean scaling). The sums are kept in one set of
 * gradients: each bin's backward adds into it as it goes (`variableGradsInto`).
 */
export function accumulateGradients<P>(
  bins: readonly PackedBin[],
  totals: StepTotals,
  objective: Objective<P>,
  params: Readonly<Record<string, tf.Variable>>,
): StepOutcome & { grads: NamedGrads } {
  const varList = Object.values(params);
  let running = new Map<string, tf.Tensor>(); // by variable name
  const metrics: Record<string, number> = {};
  let loss = 0;
  for (const bin of bins) {
    const prepared = objective.prepare?.(bin);
    let binMetrics: Readonly<Record<string, number | undefined>> = {};
    const { value, grads } = variableGradsInto(
      () => {
        const out = objective.loss(bin, totals, prepared);
        binMetrics = out.metrics;
        return bin.idle ? tf.mul(out.loss, 0) : out.loss; // an idle pass only keeps the ranks in step
      },
      varList,
      running,
    );
    if (prepared !== undefined) objective.release?.(prepared);
    loss += value.dataSync()[0];
    value.dispose();
    if (!bin.idle) addMetrics(metrics, binMetrics);
    running = new Map(Object.entries(grads));
  }
  const grads: NamedGrads = {};
  for (const [name, v] of Object.entries(params)) {
    const g = running.get(v.name);
    if (g) grads[name] = g;
  }
  return { loss, metrics, grads };
}

/** The same sums without gradients, for validation. */
export function evaluateBins<P>(
  bins: readonly PackedBin[],
  totals: StepTotals,
  objective: Objective<P>,
): StepOutcome {
  const metrics: Record<string, number> = {};
  let loss = 0;
  for (const bin of bins) {
    const prepared = objective.prepare?.(bin);
    // tidy: the objective's intermediates (layouts, log-probs) go with the bin
    const value = tf.tidy(() => {
      const out = objective.loss(bin, totals, prepared);
      if (!bin.idle) addMetrics(metrics, out.metrics);
      return out.loss.dataSync()[0];
    });
    if (prepared !== undefined) objective.release?.(prepared);
    if (!bin.idle) loss += value;
  }
  return { loss, metrics };
}

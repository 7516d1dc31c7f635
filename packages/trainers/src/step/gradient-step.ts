import * as tf from '@tensorflow/tfjs-core';
import type { NamedGrads } from '../optim/clip-grad-norm.js';
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
 * loss, whatever the packing (RL2's global-mean scaling).
 */
export function accumulateGradients<P>(
  bins: readonly PackedBin[],
  totals: StepTotals,
  objective: Objective<P>,
  params: Readonly<Record<string, tf.Variable>>,
): StepOutcome & { grads: NamedGrads } {
  const byVar = new Map(Object.entries(params).map(([name, v]) => [v.name, name]));
  const varList = Object.values(params);
  const grads: NamedGrads = {};
  const metrics: Record<string, number> = {};
  let loss = 0;
  for (const bin of bins) {
    const prepared = objective.prepare?.(bin);
    let binMetrics: Readonly<Record<string, number | undefined>> = {};
    const { value, grads: g } = tf.variableGrads(() => {
      const out = objective.loss(bin, totals, prepared);
      binMetrics = out.metrics;
      return bin.idle ? tf.mul(out.loss, 0) : out.loss; // an idle pass only keeps the ranks in step
    }, varList);
    if (prepared !== undefined) objective.release?.(prepared);
    loss += value.dataSync()[0];
    value.dispose();
    if (!bin.idle) addMetrics(metrics, binMetrics);
    for (const [varName, grad] of Object.entries(g)) {
      const name = byVar.get(varName) as string;
      const prev = grads[name];
      grads[name] = prev ? tf.tidy(() => tf.add(prev, grad)) : grad;
      if (prev) {
        prev.dispose();
        grad.dispose();
      }
    }
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

/** AdamW hyper-parameters (torch.optim.AdamW names). */
export interface AdamWConfig {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
}

/** Optimizer state of one shard: first and second moments, and the step count. */
export interface AdamWShardState {
  m: Float32Array;
  v: Float32Array;
  step: number;
}

export function createAdamWShardState(size: number): AdamWShardState {
  return { m: new Float32Array(size), v: new Float32Array(size), step: 0 };
}

/**
 * One AdamW step on a flat shard, in place (Loshchilov & Hutter, https://arxiv.org/abs/1711.05101;
 * the order of torch.optim.AdamW): p *= 1 - lr*wd; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps). Elementwise, so a sharded
 * optimizer state gives exactly the unsharded update.
 */
export function adamwShardStep(
  params: Float32Array,
  grads: Float32Array,
  state: AdamWShardState,
  c: AdamWConfig,
): void {
  const b1 = c.beta1 ?? 0.9;
  const b2 = c.beta2 ?? 0.999;
  const eps = c.eps ?? 1e-8;
  const wd = c.weightDecay ?? 0.01;
  state.step += 1;
  const bc1 = 1 - b1 ** state.step;
  const bc2 = Math.sqrt(1 - b2 ** state.step);
  for (let i = 0; i < params.length; i++) {
    const g = grads[i]!;
    params[i]! *= 1 - c.lr * wd;
    state.m[i] = b1 * state.m[i]! + (1 - b1) * g;
    state.v[i] = b2 * state.v[i]! + (1 - b2) * g * g;
    params[i]! -= (c.lr * (state.m[i]! / bc1)) / (Math.sqrt(state.v[i]!) / bc2 + eps);
  }
}

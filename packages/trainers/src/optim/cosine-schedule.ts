/** Learning-rate schedule knobs (RL2 `actor.lr`, `min_lr`, `warmup_ratio`, `scheduler`). */
export interface ScheduleOptions {
  readonly lr: number;
  readonly minLr: number;
  readonly warmupRatio: number;
  readonly totalSteps: number;
  readonly kind: 'cosine' | 'constant';
}

/** Warmup steps: floor(warmup_ratio * total_steps), as transformers' schedulers do. */
export function warmupSteps(opts: ScheduleOptions): number {
  return Math.floor(opts.warmupRatio * opts.totalSteps);
}

/**
 * Learning rate used by optimizer step `step` (0-based), matching
 * transformers' get_cosine_schedule_with_warmup with a floor at `minLr`:
 *   step < W:  lr * step / max(1, W)
 *   else:      minLr + (lr - minLr) * 0.5 * (1 + cos(pi * (step - W) / max(1, T - W)))
 * ("SGDR", https://arxiv.org/abs/1608.03983). `constant` keeps lr after warmup.
 */
export function scheduledLr(step: number, opts: ScheduleOptions): number {
  const w = warmupSteps(opts);
  if (step < w) return (opts.lr * step) / Math.max(1, w);
  if (opts.kind === 'constant') return opts.lr;
  const progress = Math.min(1, (step - w) / Math.max(1, opts.totalSteps - w));
  return opts.minLr + (opts.lr - opts.minLr) * 0.5 * (1 + Math.cos(Math.PI * progress));
}

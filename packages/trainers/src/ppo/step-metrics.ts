import type { RolloutMetrics } from '@rl2/rollout';
import { prefixed } from '../metrics/prefixed.js';
import type { ProgressUpdate } from '../metrics/progress.js';
import type { UpdateOutcome } from './ppo-worker.js';

const rate = (tokens: number, seconds: number) => tokens / Math.max(seconds, 1e-9);

/** Seconds since `began` (a `performance.now()` reading). */
export const secondsSince = (began: number) => (performance.now() - began) / 1000;

/**
 * The metrics of one PPO step, flat, in the order its phases add them: `train/*` (the rollout),
 * `tokens_per_s/{rollout,logps,update}`, `time/{rollout,sync}_s`, `kl/ref`, `actor/*`, `critic/*`.
 */
export class PpoStepMetrics {
  readonly values: Record<string, number>;
  private updateTokens = 0;
  private updateSeconds = 0;

  constructor(rollout: RolloutMetrics) {
    const { rollout_s, tokens_per_s, ...rest } = rollout;
    this.values = {
      ...prefixed('train', rest),
      'tokens_per_s/rollout': tokens_per_s,
      'time/rollout_s': rollout_s,
    };
  }

  /** `passes` no-gradient passes over the rollout's `tokens` that took `seconds` together. */
  forwardPasses(tokens: number, passes: number, seconds: number): void {
    if (passes > 0) this.values['tokens_per_s/logps'] = rate(tokens * passes, seconds);
  }

  /** The mean KL(old || ref) over action tokens, when there was a reference pass. */
  kl(kl: number | undefined): void {
    if (kl !== undefined) this.values['kl/ref'] = kl;
  }

  /** An actor or critic update. */
  update(prefix: 'actor' | 'critic', res: UpdateOutcome): void {
    Object.assign(
      this.values,
      prefixed(prefix, { loss: res.loss, grad_norm: res.gradNorm, lr: res.lr, ...res.metrics }),
    );
    this.updateTokens += res.tokens;
    this.updateSeconds += res.seconds;
  }

  /** The weight sync ended the step's training (`seconds` 0 while the actor is frozen). */
  synced(seconds: number): void {
    if (this.updateSeconds > 0)
      this.values['tokens_per_s/update'] = rate(this.updateTokens, this.updateSeconds);
    this.values['time/sync_s'] = seconds;
  }

  /** The updates' losses and gradient norms, what trainer.on_nonfinite watches (none on a step without an update). */
  watched(): Record<string, number> {
    const keys = ['actor/loss', 'actor/grad_norm', 'critic/loss', 'critic/grad_norm'];
    return Object.fromEntries(
      keys.filter((k) => this.values[k] !== undefined).map((k) => [k, this.values[k] as number]),
    );
  }

  /** What the progress display shows: actor loss, update tokens/s, `lr`, the training reward. */
  shown(lr: number): Omit<ProgressUpdate, 'step'> {
    const v = this.values;
    return {
      loss: v['actor/loss'] ?? 0,
      tokensPerSecond: v['tokens_per_s/update'] ?? 0,
      lr,
      extra: { reward: v['train/reward/mean'] },
    };
  }
}

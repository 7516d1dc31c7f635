import { SeededRng } from '@rl2/data';
import type { RolloutPrompt } from '@rl2/rollout';

/** Where a prompt stream stands, stored in the PPO checkpoint. */
export interface PromptStreamState {
  readonly epoch: number;
  readonly cursor: number;
  readonly order: number[];
  readonly rng: number[];
}

/**
 * The training prompts as an endless seeded stream: a permutation per epoch (or the file
 * order without shuffling), reshuffled when it runs out. Refill may take more prompts than
 * one step's share, so the stream, not the step number, says which prompt comes next.
 */
export class PromptStream {
  private epoch = 0;
  private cursor = 0;
  private order: number[];
  private rng: SeededRng;

  constructor(
    private readonly prompts: readonly RolloutPrompt[],
    private readonly shuffle: boolean,
    seed: number,
    state?: PromptStreamState,
  ) {
    this.rng = state ? SeededRng.fromState(state.rng) : new SeededRng(seed);
    this.order = state?.order ?? this.draw();
    if (state) {
      this.epoch = state.epoch;
      this.cursor = state.cursor;
    }
  }

  private draw(): number[] {
    const n = this.prompts.length;
    return this.shuffle ? this.rng.permutation(n) : Array.from({ length: n }, (_, i) => i);
  }

  /** The next `count` prompts, crossing into the next epoch when needed. */
  next(count: number): RolloutPrompt[] {
    const out: RolloutPrompt[] = [];
    while (out.length < count) {
      if (this.cursor >= this.order.length) {
        this.epoch += 1;
        this.cursor = 0;
        this.order = this.draw();
      }
      out.push(this.prompts[this.order[this.cursor]]);
      this.cursor += 1;
    }
    return out;
  }

  /** Prompts handed out so far (over all epochs): the rollout runner launched one group per prompt. */
  get consumed(): number {
    return this.epoch * this.prompts.length + this.cursor;
  }

  state(): PromptStreamState {
    return {
      epoch: this.epoch,
      cursor: this.cursor,
      order: [...this.order],
      rng: this.rng.state(),
    };
  }
}

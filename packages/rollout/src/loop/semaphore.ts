import { RolloutError } from '../errors.js';

/** Caps how many async tasks run at once; waiters start in FIFO order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) {
      throw new RolloutError(
        'INVALID_ARGUMENT',
        `concurrency limit must be an integer >= 1, got ${limit}`,
      );
    }
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    else this.active += 1;
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active -= 1;
    }
  }

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }
}

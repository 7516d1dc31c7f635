import { TrainersError } from '../errors.js';
import type { TrainingItem, TrainingSequence } from './training-item.js';

/** What happens to a row with a sequence longer than `data.*.max_length`. */
export type OverMaxLength = 'truncate' | 'drop';

/** The token budget every row must fit, and the config key(s) that set it (see `microBatchBudget`). */
export interface LengthBudget {
  readonly budget: number;
  readonly budgetKey: string;
}

/**
 * A sequence cut to its first `n` positions. RM sequences (`rewardAtEnd`) read the reward at
 * the last kept token, so their loss mask moves there; SFT/DPO masks are cut with the tokens.
 */
function truncate(seq: TrainingSequence, n: number, rewardAtEnd: boolean): TrainingSequence {
  return {
    inputIds: seq.inputIds.slice(0, n),
    positionIds: seq.positionIds.slice(0, n),
    targets: seq.targets.slice(0, n),
    lossMask: rewardAtEnd
      ? Array.from({ length: n }, (_, t) => (t === n - 1 ? 1 : 0))
      : seq.lossMask.slice(0, n),
  };
}

/**
 * Applies `data.*.max_length` to one tokenized row, as RL2 does (each sequence truncated to
 * max_length tokens), or drops the row with `over_max_length: drop`. Returns the row (undefined
 * when dropped) and whether it was cut.
 */
export function fitMaxLength(
  item: TrainingItem,
  maxLength: number | null,
  policy: OverMaxLength,
  rewardAtEnd: boolean,
): { item?: TrainingItem; truncated: boolean } {
  if (maxLength === null || item.sequences.every((s) => s.inputIds.length <= maxLength))
    return { item, truncated: false };
  if (policy === 'drop') return { truncated: false };
  const sequences = item.sequences.map((s) =>
    s.inputIds.length > maxLength ? truncate(s, maxLength, rewardAtEnd) : s,
  );
  return { item: { ...item, sequences }, truncated: true };
}

/**
 * Checks once, before training, that every row fits one packed micro-batch (RL2: every
 * sequence, or chosen + rejected pair, within cp_size * tp_size * max_length_per_device);
 * else the error names the file, row, length and the keys that fix it. `split` is
 * `data.train` or `data.test`.
 */
export function checkBudget(
  items: readonly TrainingItem[],
  fit: LengthBudget,
  pairs: boolean,
  split: string,
): void {
  for (const it of items) {
    const lengths = it.sequences.map((s) => s.inputIds.length);
    const unit = pairs ? lengths.reduce((a, b) => a + b, 0) : Math.max(...lengths);
    if (unit <= fit.budget) continue;
    const what = pairs
      ? `its chosen + rejected pair has ${unit} tokens (packed together)`
      : `a sequence has ${unit} tokens`;
    const cut = pairs ? Math.floor(fit.budget / 2) : fit.budget;
    throw new TrainersError(
      'BAD_DATA',
      `${it.origin} (${split}.path): ${what}, more than ${fit.budgetKey}=${fit.budget} holds. ` +
        `Raise ${fit.budgetKey}, or set ${split}.max_length=${cut} to truncate such rows ` +
        `(add ${split}.over_max_length=drop to drop them instead).`,
    );
  }
}

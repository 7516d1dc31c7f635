import { PackingError } from './errors.js';
import { assertInteger, assertLengths } from './internal/validate.js';
import { karmarkarKarp } from './karmarkar-karp.js';

/** Options of {@link planPacking}. */
export interface PackingOptions {
  /** Token budget of one packed micro-batch (RL2 `max_length_per_dp`). */
  maxTokensPerRank: number;
  /** Data-parallel world size: the bin count is always a multiple of it. */
  dpSize: number;
  /**
   * Consecutive sequences that must share a bin: 2 for (chosen, rejected) pairs in RM/DPO
   * (RL2 `pair=True`), 1 otherwise. A group weighs the sum of its members' lengths.
   */
  groupSize?: number;
}

/** Where every sequence goes for one update; see {@link planPacking}. */
export interface PackingPlan {
  /** [numBins][*] sequence indices per bin, heaviest bin first; indices >= numSequences are padding. */
  bins: number[][];
  /** [numBins] tokens per bin, non-increasing. */
  loads: number[];
  /** Sequences passed in. */
  numSequences: number;
  /** Empty sequences appended (indices numSequences .. numSequences + numPadding - 1). */
  numPadding: number;
  dpSize: number;
  /** bins.length / dpSize: rank r owns bins [r * binsPerRank, (r + 1) * binsPerRank). */
  binsPerRank: number;
  /** [numSequences + numPadding] the bins concatenated: packed position j holds sequence permutation[j]. */
  permutation: Int32Array;
}

/**
 * Plans balanced packing for one update, as RL2's `scatter_data` does on rank 0.
 *
 * n = ceil(total tokens / maxTokensPerRank), rounded up to a multiple of dpSize (at least dpSize);
 * when n exceeds the number of groups, empty groups pad the batch so every bin gets one; the groups
 * are split into n bins by {@link karmarkarKarp}; while the heaviest bin is over budget, n grows by
 * dpSize and the split is redone. The permutation is returned instead of kept in globals, so
 * results can be put back with {@link unpermute}.
 *
 * @param lengths [numSequences] token count per sequence; with groupSize g, sequences
 *   g*i .. g*i+g-1 form group i
 * @throws PackingError SEQUENCE_TOO_LONG when one sequence (or group) alone exceeds the budget
 */
export function planPacking(lengths: ArrayLike<number>, options: PackingOptions): PackingPlan {
  const { maxTokensPerRank: budget, dpSize } = options;
  const groupSize = options.groupSize ?? 1;
  if (!(budget > 0) || !Number.isFinite(budget)) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `maxTokensPerRank must be a positive number, got ${budget}.`,
    );
  }
  assertInteger('dpSize', dpSize, 1);
  assertInteger('groupSize', groupSize, 1);
  assertLengths('lengths', lengths);
  const numSequences = lengths.length;
  if (numSequences === 0 || numSequences % groupSize !== 0) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `lengths has ${numSequences} entries; it needs at least one group and a multiple of groupSize ${groupSize}` +
        (groupSize === 2 ? ' (chosen and rejected must alternate).' : '.'),
    );
  }

  const numGroups = numSequences / groupSize;
  const weights: number[] = new Array(numGroups).fill(0);
  let total = 0;
  for (let i = 0; i < numSequences; i++) {
    weights[Math.floor(i / groupSize)] += lengths[i];
    total += lengths[i];
  }
  for (let g = 0; g < numGroups; g++) {
    if (weights[g] > budget) throw tooLong(g, weights[g], groupSize, budget);
  }

  let n = Math.max(dpSize, Math.ceil(total / budget / dpSize) * dpSize);
  for (;;) {
    while (weights.length < n) weights.push(0);
    const { bins: groupBins, loads } = karmarkarKarp(weights, n);
    if (loads[0] <= budget) return toPlan(groupBins, loads, numSequences, groupSize, dpSize);
    n += dpSize;
  }
}

function tooLong(group: number, weight: number, groupSize: number, budget: number): PackingError {
  const what =
    groupSize === 1
      ? `sequence ${group}`
      : `group ${group} (sequences ${group * groupSize}..${group * groupSize + groupSize - 1})`;
  return new PackingError(
    'SEQUENCE_TOO_LONG',
    `${what} has ${weight} tokens, more than maxTokensPerRank ${budget}; raise maxTokensPerRank ` +
      '(RL2 max_length_per_dp) or truncate to a shorter max_length.',
  );
}

function toPlan(
  groupBins: number[][],
  loads: number[],
  numSequences: number,
  groupSize: number,
  dpSize: number,
): PackingPlan {
  const bins = groupBins.map((groups) => {
    const seqs: number[] = [];
    for (const g of groups) for (let m = 0; m < groupSize; m++) seqs.push(g * groupSize + m);
    return seqs;
  });
  const permutation = Int32Array.from(bins.flat());
  return {
    bins,
    loads,
    numSequences,
    numPadding: permutation.length - numSequences,
    dpSize,
    binsPerRank: bins.length / dpSize,
    permutation,
  };
}

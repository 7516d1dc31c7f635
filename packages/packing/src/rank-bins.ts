import { PackingError } from './errors.js';
import type { PackingPlan } from './plan-packing.js';

/** The contiguous slice of bins data-parallel rank `rank` trains on (its micro-batches for one step). */
export function rankBins(plan: PackingPlan, rank: number): number[][] {
  if (!Number.isInteger(rank) || rank < 0 || rank >= plan.dpSize) {
    throw new PackingError(
      'INVALID_ARGUMENT',
      `rank must be an integer in [0, ${plan.dpSize}), got ${rank}.`,
    );
  }
  return plan.bins.slice(rank * plan.binsPerRank, (rank + 1) * plan.binsPerRank);
}

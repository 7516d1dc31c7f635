import { ParallelError } from '../errors.js';
import type { GroupSpec } from './collective.js';

/** `globalRank`'s rank within the group `spec` (its index in `spec.ranks`); a non-member is refused. */
export function groupRank(spec: GroupSpec, globalRank: number): number {
  const rank = spec.ranks.indexOf(globalRank);
  if (rank < 0)
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `rank ${globalRank} is not in group '${spec.name}' (ranks [${spec.ranks.join(', ')}]); only members create a group.`,
    );
  return rank;
}

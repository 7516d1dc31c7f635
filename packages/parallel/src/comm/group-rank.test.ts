import { describe, expect, it } from 'vitest';
import { groupRank } from './group-rank.js';

describe('groupRank', () => {
  it("is the global rank's index in the group's ranks", () => {
    expect(groupRank({ name: 'tp', ranks: [2, 3] }, 3)).toBe(1);
    expect(groupRank({ name: 'dp', ranks: [5, 1, 3] }, 5)).toBe(0);
  });

  it('refuses a rank outside the group, naming the group and its ranks', () => {
    expect(() => groupRank({ name: 'tp', ranks: [2, 3] }, 0)).toThrow(
      "rank 0 is not in group 'tp' (ranks [2, 3]); only members create a group.",
    );
  });
});

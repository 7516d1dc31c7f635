import { beforeAll, describe, expect, it } from 'vitest';
import { initEngine } from '@rl2/engine';
import { causalMask, contiguousSegments, MASKED, packedCausalMask } from './attention.js';

beforeAll(async () => {
  await initEngine({ backend: 'cpu', logger: () => {} });
});

describe('packed attention masks', () => {
  it('finds contiguous sequences of a packed row', () => {
    expect(contiguousSegments([0, 0, 0, 1, 1, 2])).toEqual([3, 2, 1]);
    expect(contiguousSegments([4, 4, 4])).toBeUndefined(); // one sequence: plain causal mask
    expect(contiguousSegments([0, 1, 0])).toBeUndefined(); // id reappears: needs the full mask
  });

  it('builds block-diagonal causal masks', () => {
    const m = packedCausalMask([0, 0, 1], 1).arraySync()[0]!;
    expect(m).toEqual([
      [0, MASKED, MASKED],
      [0, 0, MASKED],
      [MASKED, MASKED, 0],
    ]);
    expect(causalMask(2).arraySync()).toEqual([
      [
        [0, MASKED],
        [0, 0],
      ],
    ]);
  });
});

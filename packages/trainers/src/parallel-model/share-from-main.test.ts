import { RolloutError } from '@rl2/rollout';
import { describe, expect, it } from 'vitest';
import type { DataParallel } from './data-parallel.js';
import { shareFromMain } from './share-from-main.js';

/**
 * Two ranks played one after the other: rank 0's sums are recorded (the other rank adds zeros),
 * then rank 1 gets those sums back in the same order. No process group: the packed-sum path.
 */
async function onTwoRanks<T>(
  produce: () => Promise<T>,
): Promise<{ main: PromiseSettledResult<T>; other: PromiseSettledResult<T> }> {
  const sums: Float32Array[] = [];
  const rank0: DataParallel = {
    rank: 0,
    size: 2,
    allReduceSum: (b) => {
      sums.push(b.slice());
      return b;
    },
    close: async () => {},
  };
  const main = (
    await Promise.allSettled([shareFromMain(rank0, produce)])
  )[0] as PromiseSettledResult<T>;
  let k = 0;
  const rank1: DataParallel = {
    rank: 1,
    size: 2,
    allReduceSum: (b) => {
      expect(b.every((x) => x === 0)).toBe(true);
      return sums[k++] as Float32Array;
    },
    close: async () => {},
  };
  const other = (
    await Promise.allSettled([
      shareFromMain(rank1, () => Promise.reject(new Error('rank 1 must not produce'))),
    ])
  )[0] as PromiseSettledResult<T>;
  return { main, other };
}

describe('shareFromMain', () => {
  it('hands rank 0 value to the other rank exactly (float64 numbers, unicode, nesting)', async () => {
    const value = {
      logps: [-0.1234567890123, -1e-30, 3],
      text: 'é ✓ <|im_end|>',
      nested: [{ a: 1 }],
    };
    const { main, other } = await onTwoRanks(async () => value);
    expect(main).toEqual({ status: 'fulfilled', value });
    expect(other).toEqual({ status: 'fulfilled', value });
  });

  it('an error on rank 0 is thrown on every rank with its class and code', async () => {
    const { main, other } = await onTwoRanks(async () => {
      throw new RolloutError('ENGINE_UNREACHABLE', 'cannot reach http://127.0.0.1:1/generate');
    });
    for (const r of [main, other]) {
      expect(r.status).toBe('rejected');
      const e = (r as PromiseRejectedResult).reason as RolloutError;
      expect(e).toBeInstanceOf(RolloutError);
      expect(e.code).toBe('ENGINE_UNREACHABLE');
      expect(e.message).toContain('127.0.0.1:1');
    }
  });

  it('undefined comes back as undefined', async () => {
    const { other } = await onTwoRanks(async () => undefined);
    expect(other).toEqual({ status: 'fulfilled', value: undefined });
  });
});

import { describe, expect, it } from 'vitest';
import { BlockPool } from './block-pool.js';

// The block pool's bookkeeping, hand-derived: lowest free ids, reference counts, segments added
// when full and dropped once empty, a block's tokens copied in every layer and kv head.
const shape = { layers: 2, kvHeads: 2, headDim: 3, blockSize: 4, segmentBlocks: 2 };

describe('BlockPool', () => {
  it('hands out the lowest free block and grows by a segment when full', () => {
    const pool = new BlockPool(shape);
    expect(pool.bytes).toBe(0);
    expect([pool.alloc(), pool.alloc(), pool.alloc()]).toEqual([0, 1, 2]);
    expect(pool.segments).toBe(2);
    // a segment: 2 blocks of 2 heads x 4 tokens x 3 floats, keys and values, 2 layers
    expect(pool.bytes).toBe(2 * (2 * 2 * 4 * 3 * 4 * 2 * 2));
    expect(pool.k[0]!.length).toBe(2);
    expect(pool.k[1]![1]!.length).toBe(2 * 2 * 4 * 3);
    pool.release(1);
    expect(pool.alloc()).toBe(1);
    expect(pool.heldBlocks).toBe(3);
  });

  it('frees a block at its last release and drops trailing empty segments', () => {
    const pool = new BlockPool(shape);
    const ids = [pool.alloc(), pool.alloc(), pool.alloc(), pool.alloc(), pool.alloc()];
    expect(pool.segments).toBe(3);
    pool.retain(4);
    pool.release(4);
    expect(pool.count(4)).toBe(1);
    expect(pool.segments).toBe(3);
    pool.release(4);
    expect(pool.segments).toBe(2);
    // segment 0 empties but segment 1 still holds block 2: nothing is dropped until it goes
    pool.release(0);
    pool.release(1);
    pool.release(3);
    expect(pool.segments).toBe(2);
    expect(pool.heldBytes).toBe(2 * 2 * 4 * 3 * 4 * 2);
    pool.release(ids[2]!);
    expect(pool.segments).toBe(0);
    expect(pool.heldBlocks).toBe(0);
    expect(pool.alloc()).toBe(0);
  });

  it('refuses to retain or release a free block', () => {
    const pool = new BlockPool(shape);
    expect(() => pool.retain(0)).toThrow(/block 0 is free/);
    const id = pool.alloc();
    pool.release(id);
    expect(() => pool.release(id)).toThrow(/block 0 is free/);
  });

  it('copies the first tokens of a block in every layer and kv head', () => {
    const pool = new BlockPool(shape);
    const from = pool.alloc();
    pool.alloc();
    const to = pool.alloc(); // in the second segment
    for (const layer of [...pool.k, ...pool.v])
      for (let i = 0; i < layer[0]!.length; i++) layer[0]![i] = i + 1;
    pool.copy(from, to, 2);
    for (const layer of [...pool.k, ...pool.v]) {
      const dst = layer[1]!;
      // kv head 0: tokens 0-1 of block 0 are floats 0-5; kv head 1 starts at 4 tokens x 3 floats
      expect(Array.from(dst.subarray(0, 12))).toEqual([1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0]);
      expect(Array.from(dst.subarray(12, 24))).toEqual([13, 14, 15, 16, 17, 18, 0, 0, 0, 0, 0, 0]);
    }
  });
});

import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../test/random.js';
import { BinaryHeap } from './binary-heap.js';

describe('BinaryHeap', () => {
  it('pops in ascending order under its comparator, with pushes interleaved', () => {
    const rand = seededRandom(9);
    const heap = new BinaryHeap<number>((a, b) => a < b);
    const kept: number[] = [];
    const popped: number[] = [];
    for (let i = 0; i < 500; i++) {
      const v = Math.floor(rand() * 100);
      heap.push(v);
      kept.push(v);
      if (i % 3 === 2) {
        const min = Math.min(...kept);
        expect(heap.pop()).toBe(min);
        kept.splice(kept.indexOf(min), 1);
      }
    }
    while (heap.size > 0) popped.push(heap.pop()!);
    expect(popped).toEqual(kept.sort((a, b) => a - b));
    expect(heap.pop()).toBeUndefined();
  });
});

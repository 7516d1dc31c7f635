import { ModelsError } from '../errors.js';

/** Most segments the native decode step takes per layer (PAGED_MAX_SEGS in engine native/paged-kv.h). */
export const MAX_SEGMENTS = 4096;

/** Sizes of a {@link BlockPool}. */
export interface BlockPoolShape {
  layers: number;
  kvHeads: number;
  headDim: number;
  /** Tokens per block (default 16). */
  blockSize?: number;
  /** Blocks per segment, the unit the pool grows and shrinks by (default 32). */
  segmentBlocks?: number;
}

/**
 * KV blocks with reference counts: per layer, keys and values in segments of `segmentBlocks`
 * blocks of [kvHeads, blockSize, headDim] floats. Block id k is block k % segmentBlocks of
 * segment floor(k / segmentBlocks). The pool grows by a segment when no block is free (nothing
 * is copied) and drops its trailing segments once no block in them is held, so the memory it
 * holds follows the tokens held. A block is free at count 0; `alloc` hands out the lowest free
 * id, so what stays held packs into the first segments.
 */
export class BlockPool {
  readonly blockSize: number;
  readonly segmentBlocks: number;
  readonly k: Float32Array[][];
  readonly v: Float32Array[][];
  private readonly refs: number[] = [];
  /** Held blocks per segment. */
  private readonly segmentHeld: number[] = [];
  /** No free block below this id. */
  private lowestFree = 0;
  private readonly blockFloats: number;

  constructor(readonly shape: BlockPoolShape) {
    this.blockSize = shape.blockSize ?? 16;
    this.segmentBlocks = shape.segmentBlocks ?? 32;
    this.blockFloats = shape.kvHeads * this.blockSize * shape.headDim;
    this.k = Array.from({ length: shape.layers }, () => []);
    this.v = Array.from({ length: shape.layers }, () => []);
  }

  /** Segments allocated now. */
  get segments(): number {
    return this.segmentHeld.length;
  }

  /** Blocks with a count above 0. */
  get heldBlocks(): number {
    return this.segmentHeld.reduce((a, b) => a + b, 0);
  }

  /** Bytes of keys and values the pool holds (every layer's segments). */
  get bytes(): number {
    return this.segments * this.segmentBlocks * this.blockBytes;
  }

  /** Bytes of keys and values in held blocks (what `bytes` would be with segments of one block). */
  get heldBytes(): number {
    return this.heldBlocks * this.blockBytes;
  }

  /** Bytes of one block's keys and values over every layer. */
  private get blockBytes(): number {
    return this.blockFloats * 4 * 2 * this.shape.layers;
  }

  /** References to block `id` (0: free). */
  count(id: number): number {
    return this.refs[id] ?? 0;
  }

  /** A free block with count 1 (the lowest id; a new segment when none is free). */
  alloc(): number {
    let id = this.lowestFree;
    while (id < this.refs.length && this.refs[id]! > 0) id++;
    if (id === this.refs.length) this.grow();
    this.refs[id] = 1;
    this.segmentHeld[Math.floor(id / this.segmentBlocks)]! += 1;
    this.lowestFree = id + 1;
    return id;
  }

  /** One more reference to a held block (a row sharing it). */
  retain(id: number): void {
    if (this.count(id) < 1)
      throw new ModelsError('INVALID_ARGUMENT', `BlockPool.retain: block ${id} is free`);
    this.refs[id]! += 1;
  }

  /** Drops one reference; at 0 the block is free, and empty trailing segments are dropped. */
  release(id: number): void {
    if (this.count(id) < 1)
      throw new ModelsError('INVALID_ARGUMENT', `BlockPool.release: block ${id} is free`);
    this.refs[id]! -= 1;
    if (this.refs[id]! > 0) return;
    this.segmentHeld[Math.floor(id / this.segmentBlocks)]! -= 1;
    this.lowestFree = Math.min(this.lowestFree, id);
    while (this.segmentHeld.length > 0 && this.segmentHeld.at(-1) === 0) this.shrink();
  }

  /** Copies the first `tokens` tokens of block `from` into block `to`, every layer and kv head. */
  copy(from: number, to: number, tokens: number): void {
    const { kvHeads, headDim } = this.shape;
    const run = tokens * headDim;
    for (let l = 0; l < this.shape.layers; l++) {
      for (const pool of [this.k[l]!, this.v[l]!]) {
        const src = pool[Math.floor(from / this.segmentBlocks)]!;
        const dst = pool[Math.floor(to / this.segmentBlocks)]!;
        for (let h = 0; h < kvHeads; h++) {
          const s0 = (from % this.segmentBlocks) * this.blockFloats + h * this.blockSize * headDim;
          const t0 = (to % this.segmentBlocks) * this.blockFloats + h * this.blockSize * headDim;
          dst.set(src.subarray(s0, s0 + run), t0);
        }
      }
    }
  }

  private grow(): void {
    if (this.segments >= MAX_SEGMENTS) {
      throw new ModelsError(
        'RESOURCE_EXHAUSTED',
        `BlockPool: the KV cache needs more than ${MAX_SEGMENTS} segments of ${this.segmentBlocks} blocks; ` +
          'raise segmentBlocks or lower maxBatch / maxNewTokens',
      );
    }
    const floats = this.segmentBlocks * this.blockFloats;
    for (let l = 0; l < this.shape.layers; l++) {
      this.k[l]!.push(new Float32Array(floats));
      this.v[l]!.push(new Float32Array(floats));
    }
    this.segmentHeld.push(0);
    for (let i = 0; i < this.segmentBlocks; i++) this.refs.push(0);
  }

  private shrink(): void {
    for (let l = 0; l < this.shape.layers; l++) {
      this.k[l]!.pop();
      this.v[l]!.pop();
    }
    this.segmentHeld.pop();
    this.refs.length -= this.segmentBlocks;
    this.lowestFree = Math.min(this.lowestFree, this.refs.length);
  }
}

/** How values from the ranks combine. `avg` is the sum divided by the group size. */
export type ReduceOp = 'sum' | 'max' | 'avg';

/** Ranks of the world taking part in a group, and the group's name (for errors). */
export interface GroupSpec {
  name: string;
  /** Global ranks, in group-rank order. */
  ranks: readonly number[];
}

/**
 * Asynchronous collectives over Float32Array buffers, for code running on an event loop.
 * Every member of the group must call the same collectives in the same order (SPMD).
 * In-place ops (allReduce, broadcast, recv) fill and return the buffer passed in.
 */
export interface Collective {
  readonly rank: number;
  readonly size: number;
  readonly spec: GroupSpec;
  allReduce(buf: Float32Array, op?: ReduceOp): Promise<Float32Array>;
  /** Returns size * buf.length values, rank r's buffer at offset r * buf.length. */
  allGather(buf: Float32Array): Promise<Float32Array>;
  /** buf.length must be a multiple of size; returns this rank's reduced 1/size slice. */
  reduceScatter(buf: Float32Array, op?: ReduceOp): Promise<Float32Array>;
  broadcast(buf: Float32Array, root: number): Promise<Float32Array>;
  barrier(): Promise<void>;
  /** Point-to-point; `peer` is a group rank. */
  send(buf: Float32Array, peer: number): Promise<void>;
  recv(buf: Float32Array, peer: number): Promise<Float32Array>;
}

/** A collective started without waiting; `wait()` blocks until it completes. */
export interface PendingOp<T> {
  wait(): T;
}

/**
 * Blocking collectives for the compute thread. tfjs runs forward and backward passes
 * synchronously, so a collective inside a gradient function (tensor-parallel all-reduce) must
 * block: these calls wait on Atomics while a worker thread does the socket I/O (see README).
 * `i*` variants start the op and return at once, so communication overlaps compute (FSDP prefetch).
 */
export interface ProcessGroup {
  readonly rank: number;
  readonly size: number;
  readonly spec: GroupSpec;
  allReduce(buf: Float32Array, op?: ReduceOp): Float32Array;
  allGather(buf: Float32Array): Float32Array;
  reduceScatter(buf: Float32Array, op?: ReduceOp): Float32Array;
  broadcast(buf: Float32Array, root: number): Float32Array;
  barrier(): void;
  send(buf: Float32Array, peer: number): void;
  recv(buf: Float32Array, peer: number): Float32Array;
  iallGather(buf: Float32Array): PendingOp<Float32Array>;
  iallReduce(buf: Float32Array, op?: ReduceOp): PendingOp<Float32Array>;
  ireduceScatter(buf: Float32Array, op?: ReduceOp): PendingOp<Float32Array>;
  /** A group of some world ranks; every listed rank must create it with the same name. */
  subgroup(ranks: readonly number[], name: string): ProcessGroup;
}

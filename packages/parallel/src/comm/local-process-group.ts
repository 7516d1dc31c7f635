import { ParallelError } from '../errors.js';
import type { GroupSpec, PendingOp, ProcessGroup, ReduceOp } from './collective.js';

const done = <T>(v: T): PendingOp<T> => ({ wait: () => v });

/** The group of one process (world size 1): every collective is the identity. */
export class LocalProcessGroup implements ProcessGroup {
  readonly rank = 0;
  readonly size = 1;
  constructor(readonly spec: GroupSpec = { name: 'world', ranks: [0] }) {}
  allReduce(buf: Float32Array, _op?: ReduceOp): Float32Array {
    return buf;
  }
  allGather(buf: Float32Array): Float32Array {
    return buf.slice();
  }
  reduceScatter(buf: Float32Array, _op?: ReduceOp): Float32Array {
    return buf.slice();
  }
  broadcast(buf: Float32Array, _root: number): Float32Array {
    return buf;
  }
  barrier(): void {}
  send(_buf: Float32Array, peer: number): void {
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `send to group rank ${peer}: group '${this.spec.name}' has one rank.`,
    );
  }
  recv(_buf: Float32Array, peer: number): Float32Array {
    throw new ParallelError(
      'INVALID_ARGUMENT',
      `recv from group rank ${peer}: group '${this.spec.name}' has one rank.`,
    );
  }
  iallGather(buf: Float32Array): PendingOp<Float32Array> {
    return done(buf.slice());
  }
  iallReduce(buf: Float32Array): PendingOp<Float32Array> {
    return done(buf);
  }
  ireduceScatter(buf: Float32Array): PendingOp<Float32Array> {
    return done(buf.slice());
  }
  subgroup(ranks: readonly number[], name: string): ProcessGroup {
    if (ranks.length !== 1 || ranks[0] !== this.spec.ranks[0]) {
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `subgroup '${name}' [${ranks.join(', ')}] of a one-rank world must be [${this.spec.ranks[0]}].`,
      );
    }
    return new LocalProcessGroup({ name, ranks: [...ranks] });
  }
}

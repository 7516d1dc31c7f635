import { ParallelError } from '../errors.js';
import type { Collective, GroupSpec, ReduceOp } from './collective.js';
import { groupRank } from './group-rank.js';
import { FRAME_ARRIVE, type PeerMesh } from './peer-mesh.js';

/** Default collective timeout; override with RL2_COLLECTIVE_TIMEOUT_MS or the option. */
export const DEFAULT_COLLECTIVE_TIMEOUT_MS = 300_000;

/** Per group, per peer: the highest op sequence the peer has entered (ranks enter ops in order). */
export type ArrivalBook = Map<string, Map<number, number>>;

interface OpContext {
  recv(peer: number, sub: string): Promise<Float32Array>;
  send(peer: number, sub: string, data: Float32Array): Promise<void>;
}

function bytes(a: Float32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function combine(into: Float32Array, from: Float32Array, op: ReduceOp): void {
  if (op === 'max') for (let i = 0; i < into.length; i++) into[i] = Math.max(into[i]!, from[i]!);
  else for (let i = 0; i < into.length; i++) into[i]! += from[i]!;
}

/**
 * Collectives over a {@link PeerMesh} with ring algorithms (bandwidth-optimal: each rank sends
 * 2(n-1)/n of the buffer for an all-reduce; see Patarasuk & Yuan 2009,
 * https://doi.org/10.1016/j.jpdc.2008.09.002). Every op first tells the other members it has
 * arrived, so a timeout can name the ranks that never reached the op.
 */
export class SocketCollective implements Collective {
  readonly rank: number;
  readonly size: number;
  private seq = 0;
  private readonly p2pSent = new Map<number, number>();
  private readonly p2pRecvd = new Map<number, number>();

  constructor(
    private readonly mesh: PeerMesh,
    readonly spec: GroupSpec,
    private readonly arrivals: ArrivalBook,
    private readonly timeoutMs = DEFAULT_COLLECTIVE_TIMEOUT_MS,
  ) {
    this.rank = groupRank(spec, mesh.rank);
    this.size = spec.ranks.length;
    if (!arrivals.has(spec.name)) arrivals.set(spec.name, new Map());
  }

  /** Route FRAME_ARRIVE notices of a mesh into an arrival book. */
  static trackArrivals(mesh: PeerMesh, book: ArrivalBook): void {
    mesh.setArrivalHandler((peer, key) => {
      const at = key.lastIndexOf('#');
      const group = key.slice(0, at);
      const seq = Number(key.slice(at + 1));
      const m = book.get(group) ?? new Map<number, number>();
      book.set(group, m);
      m.set(peer, Math.max(m.get(peer) ?? -1, seq));
    });
  }

  private global(groupRank: number): number {
    return this.spec.ranks[groupRank]!;
  }

  private async run<T>(
    opName: string,
    body: (ctx: OpContext) => Promise<T>,
    waitFor?: number[],
  ): Promise<T> {
    const seq = this.seq++;
    const key = `${this.spec.name}#${seq}`;
    const peers = this.spec.ranks.filter((r) => r !== this.mesh.rank);
    for (const p of peers) this.mesh.send(p, key, new Uint8Array(0), FRAME_ARRIVE).catch(() => {});
    const cancels = new Set<() => void>();
    const ctx: OpContext = {
      recv: async (peer, sub) => {
        const r = this.mesh.recv(this.global(peer), `${key}/${sub}`);
        cancels.add(r.cancel);
        const p = await r.promise;
        cancels.delete(r.cancel);
        return new Float32Array(p.buffer, p.byteOffset, p.byteLength / 4);
      },
      send: (peer, sub, data) => this.mesh.send(this.global(peer), `${key}/${sub}`, bytes(data)),
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        for (const c of cancels) c();
        reject(this.timeoutError(opName, seq, waitFor));
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([body(ctx), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  private timeoutError(opName: string, seq: number, waitFor?: number[]): ParallelError {
    const seen = this.arrivals.get(this.spec.name)!;
    const missing = this.spec.ranks.filter(
      (r) => r !== this.mesh.rank && (seen.get(r) ?? -1) < seq,
    );
    const where = `${opName} #${seq} of group '${this.spec.name}' (ranks [${this.spec.ranks.join(', ')}])`;
    const why = missing.length
      ? `rank${missing.length > 1 ? 's' : ''} [${missing.join(', ')}] never reached it`
      : `every rank reached it but rank${(waitFor ?? []).length > 1 ? 's' : ''} ` +
        `[${(waitFor ?? []).map((g) => this.global(g)).join(', ')}] did not deliver its data`;
    return new ParallelError(
      'COLLECTIVE_TIMEOUT',
      `rank ${this.mesh.rank}: ${where} timed out after ${this.timeoutMs} ms: ${why}. Check that ` +
        `rank's log; raise the limit with RL2_COLLECTIVE_TIMEOUT_MS if it is only slow.`,
    );
  }

  /** Chunk k of a buffer split into `n` near-equal contiguous pieces. */
  private static bounds(length: number, n: number, k: number): [number, number] {
    return [Math.floor((k * length) / n), Math.floor(((k + 1) * length) / n)];
  }

  /**
   * Ring reduce-scatter over chunks; afterwards rank r holds the reduced chunk (r + shift) mod n.
   * Step s: send chunk (r+shift-s-1), receive chunk (r+shift-s-2) from the left and reduce into it.
   */
  private async ringReduce(
    ctx: OpContext,
    buf: Float32Array,
    op: ReduceOp,
    shift: number,
  ): Promise<void> {
    const n = this.size;
    const r = this.rank;
    const right = (r + 1) % n;
    const left = (r - 1 + n) % n;
    const mod = (k: number) => ((k % n) + n) % n;
    for (let s = 0; s < n - 1; s++) {
      const [a, b] = SocketCollective.bounds(buf.length, n, mod(r + shift - s - 1));
      const [c, d] = SocketCollective.bounds(buf.length, n, mod(r + shift - s - 2));
      const [, got] = await Promise.all([
        ctx.send(right, `rs${s}`, buf.subarray(a, b)),
        ctx.recv(left, `rs${s}`),
      ]);
      combine(buf.subarray(c, d), got, op);
    }
  }

  /** Ring all-gather; rank r starts owning chunk (r + shift) mod n. */
  private async ringGather(ctx: OpContext, buf: Float32Array, shift: number): Promise<void> {
    const n = this.size;
    const r = this.rank;
    const mod = (k: number) => ((k % n) + n) % n;
    for (let s = 0; s < n - 1; s++) {
      const [a, b] = SocketCollective.bounds(buf.length, n, mod(r + shift - s));
      const [c] = SocketCollective.bounds(buf.length, n, mod(r + shift - s - 1));
      const [, got] = await Promise.all([
        ctx.send((r + 1) % n, `ag${s}`, buf.subarray(a, b)),
        ctx.recv((r - 1 + n) % n, `ag${s}`),
      ]);
      buf.set(got, c);
    }
  }

  async allReduce(buf: Float32Array, op: ReduceOp = 'sum'): Promise<Float32Array> {
    if (this.size > 1) {
      await this.run(
        'allReduce',
        async (ctx) => {
          await this.ringReduce(ctx, buf, op, 1);
          await this.ringGather(ctx, buf, 1);
        },
        [(this.rank - 1 + this.size) % this.size],
      );
    }
    if (op === 'avg') for (let i = 0; i < buf.length; i++) buf[i]! /= this.size;
    return buf;
  }

  async allGather(buf: Float32Array): Promise<Float32Array> {
    const out = new Float32Array(buf.length * this.size);
    out.set(buf, this.rank * buf.length);
    if (this.size > 1)
      await this.run('allGather', (ctx) => this.ringGather(ctx, out, 0), [
        (this.rank - 1 + this.size) % this.size,
      ]);
    return out;
  }

  async reduceScatter(buf: Float32Array, op: ReduceOp = 'sum'): Promise<Float32Array> {
    if (buf.length % this.size !== 0) {
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `reduceScatter on group '${this.spec.name}': buffer length ${buf.length} is not a multiple of the group size ${this.size}; pad it.`,
      );
    }
    const work = Float32Array.from(buf);
    if (this.size > 1)
      await this.run('reduceScatter', (ctx) => this.ringReduce(ctx, work, op, 0), [
        (this.rank - 1 + this.size) % this.size,
      ]);
    const c = buf.length / this.size;
    const out = work.slice(this.rank * c, (this.rank + 1) * c);
    if (op === 'avg') for (let i = 0; i < out.length; i++) out[i]! /= this.size;
    return out;
  }

  async broadcast(buf: Float32Array, root: number): Promise<Float32Array> {
    this.checkPeer(root, 'broadcast root');
    if (this.size === 1) return buf;
    await this.run(
      'broadcast',
      async (ctx) => {
        if (this.rank === root) {
          await Promise.all(
            this.spec.ranks.map((_, g) => (g === root ? undefined : ctx.send(g, 'b', buf))),
          );
        } else {
          buf.set(await ctx.recv(root, 'b'));
        }
      },
      [root],
    );
    return buf;
  }

  async barrier(): Promise<void> {
    await this.allReduce(new Float32Array(1));
  }

  async send(buf: Float32Array, peer: number): Promise<void> {
    this.checkPeer(peer, 'send peer');
    const n = this.p2pSent.get(peer) ?? 0;
    this.p2pSent.set(peer, n + 1);
    await this.mesh.send(
      this.global(peer),
      `${this.spec.name}:p2p:${this.rank}>${peer}#${n}`,
      bytes(buf),
    );
  }

  async recv(buf: Float32Array, peer: number): Promise<Float32Array> {
    this.checkPeer(peer, 'recv peer');
    const n = this.p2pRecvd.get(peer) ?? 0;
    this.p2pRecvd.set(peer, n + 1);
    const r = this.mesh.recv(this.global(peer), `${this.spec.name}:p2p:${peer}>${this.rank}#${n}`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        r.cancel();
        reject(
          new ParallelError(
            'COLLECTIVE_TIMEOUT',
            `rank ${this.mesh.rank}: recv #${n} from rank ${this.global(peer)} on group ` +
              `'${this.spec.name}' timed out after ${this.timeoutMs} ms: rank ` +
              `${this.global(peer)} never sent it.`,
          ),
        );
      }, this.timeoutMs);
    });
    try {
      const p = await Promise.race([r.promise, timeout]);
      if (p.byteLength !== buf.byteLength) {
        throw new ParallelError(
          'INVALID_ARGUMENT',
          `recv from rank ${this.global(peer)}: got ${p.byteLength / 4} values but the buffer ` +
            `holds ${buf.length}; match the send and recv sizes.`,
        );
      }
      buf.set(new Float32Array(p.buffer, p.byteOffset, p.byteLength / 4));
      return buf;
    } finally {
      clearTimeout(timer);
    }
  }

  private checkPeer(peer: number, what: string): void {
    if (!Number.isInteger(peer) || peer < 0 || peer >= this.size) {
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `${what}=${peer} is not a rank of group '${this.spec.name}' (size ${this.size}).`,
      );
    }
  }
}

import {
  MessageChannel,
  type MessagePort,
  Worker,
  receiveMessageOnPort,
} from 'node:worker_threads';
import { ParallelError, type ParallelErrorCode } from '../errors.js';
import { type LaunchEnv, readLaunchEnv } from '../launch/read-launch-env.js';
import type { GroupSpec, PendingOp, ProcessGroup, ReduceOp } from './collective.js';
import { groupRank } from './group-rank.js';
import type { CommReply, CommRequest } from './comm-worker.js';
import { loadGlooAddon } from './gloo-addon.js';
import { joinGlooWorld } from './gloo-process-group.js';
import { LocalProcessGroup } from './local-process-group.js';
import { type SocketWorldOptions, resolveTimeouts } from './socket-world.js';

/** The world group plus what it was built from; `close()` ends the connections. */
export interface World extends ProcessGroup {
  readonly env: LaunchEnv;
  /** What runs the collectives: `gloo`, `sockets`, or `single` (world size 1, none needed). */
  readonly collectives: 'gloo' | 'sockets' | 'single';
  close(): Promise<void>;
}

/** Which implementation runs the collectives; `auto` is Gloo when its addon is built, else sockets. */
export type CollectivesChoice = 'auto' | 'gloo' | 'sockets';

export interface InitProcessGroupOptions extends SocketWorldOptions {
  /** Rank layout; default `readLaunchEnv()`. */
  env?: LaunchEnv;
  /** Default `RL2_COLLECTIVES` or `auto`. Every rank of a job must end up with the same one. */
  collectives?: CollectivesChoice;
  /** Receives the one line saying which collectives run (local rank 0 only); default console.info. */
  logger?: (line: string) => void;
}

function parseCollectives(v: string | undefined, from: string): CollectivesChoice {
  if (v === undefined || v === '') return 'auto';
  if (v === 'auto' || v === 'gloo' || v === 'sockets') return v;
  throw new ParallelError('INVALID_ARGUMENT', `${from}="${v}" is not one of auto, gloo, sockets.`);
}

/** Blocking request/reply to the communication worker (one per process). */
class CommChannel {
  private nextId = 0;
  private readonly stash = new Map<number, CommReply>();

  constructor(
    readonly worker: Worker,
    private readonly port: MessagePort,
    private readonly ctrl: Int32Array,
    private readonly waitLimitMs: number,
    readonly worldSize: number,
  ) {}

  request(
    op: CommRequest['op'],
    group: GroupSpec,
    data: Float32Array,
    arg?: ReduceOp | number,
  ): number {
    const id = this.nextId++;
    const copy = data.slice(); // the worker owns the copy; the caller keeps its buffer
    this.port.postMessage({ id, op, group, data: copy, arg } satisfies CommRequest, [copy.buffer]);
    return id;
  }

  /** Block the calling thread until reply `id` arrives (Atomics.wait on the shared counter). */
  wait(id: number): Float32Array | undefined {
    const deadline = Date.now() + this.waitLimitMs;
    for (;;) {
      const seen = Atomics.load(this.ctrl, 1);
      for (let m = receiveMessageOnPort(this.port); m; m = receiveMessageOnPort(this.port)) {
        const r = m.message as CommReply;
        this.stash.set(r.id, r);
      }
      const crash = this.stash.get(-1);
      if (crash && !crash.ok)
        throw new ParallelError(crash.code as ParallelErrorCode, crash.message);
      const r = this.stash.get(id);
      if (r) {
        this.stash.delete(id);
        if (!r.ok) throw new ParallelError(r.code as ParallelErrorCode, r.message);
        return r.data;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new ParallelError(
          'COLLECTIVE_TIMEOUT',
          `the communication worker did not answer within ${this.waitLimitMs} ms; it may have crashed.`,
        );
      }
      Atomics.wait(this.ctrl, 1, seen, Math.min(left, 1000));
    }
  }
}

/** A group whose collectives run in the communication worker; calls block the caller. */
class WorkerProcessGroup implements ProcessGroup {
  readonly rank: number;
  readonly size: number;

  constructor(
    protected readonly channel: CommChannel,
    readonly spec: GroupSpec,
    globalRank: number,
  ) {
    this.rank = groupRank(spec, globalRank);
    this.size = spec.ranks.length;
  }

  private call(op: CommRequest['op'], buf: Float32Array, arg?: ReduceOp | number): Float32Array {
    return this.channel.wait(this.channel.request(op, this.spec, buf, arg)) ?? buf;
  }
  private pending(
    op: CommRequest['op'],
    buf: Float32Array,
    arg?: ReduceOp | number,
  ): PendingOp<Float32Array> {
    const id = this.channel.request(op, this.spec, buf, arg);
    return { wait: () => this.channel.wait(id)! };
  }

  allReduce(buf: Float32Array, op: ReduceOp = 'sum'): Float32Array {
    if (this.size === 1) return buf;
    buf.set(this.call('allReduce', buf, op));
    return buf;
  }
  allGather(buf: Float32Array): Float32Array {
    return this.size === 1 ? buf.slice() : this.call('allGather', buf);
  }
  reduceScatter(buf: Float32Array, op: ReduceOp = 'sum'): Float32Array {
    return this.size === 1 ? buf.slice() : this.call('reduceScatter', buf, op);
  }
  broadcast(buf: Float32Array, root: number): Float32Array {
    if (this.size === 1) return buf;
    buf.set(this.call('broadcast', buf, root));
    return buf;
  }
  barrier(): void {
    if (this.size > 1) this.call('barrier', new Float32Array(0));
  }
  send(buf: Float32Array, peer: number): void {
    this.call('send', buf, peer);
  }
  recv(buf: Float32Array, peer: number): Float32Array {
    buf.set(this.call('recv', buf, peer));
    return buf;
  }
  iallGather(buf: Float32Array): PendingOp<Float32Array> {
    return this.pending('allGather', buf);
  }
  iallReduce(buf: Float32Array, op: ReduceOp = 'sum'): PendingOp<Float32Array> {
    return this.pending('allReduce', buf, op);
  }
  ireduceScatter(buf: Float32Array, op: ReduceOp = 'sum'): PendingOp<Float32Array> {
    return this.pending('reduceScatter', buf, op);
  }
  subgroup(ranks: readonly number[], name: string): ProcessGroup {
    for (const r of ranks) {
      if (!Number.isInteger(r) || r < 0 || r >= this.channel.worldSize) {
        throw new ParallelError(
          'INVALID_ARGUMENT',
          `subgroup '${name}': rank ${r} is not a world rank (world size ${this.channel.worldSize}).`,
        );
      }
    }
    return new WorkerProcessGroup(
      this.channel,
      { name, ranks: [...ranks] },
      this.spec.ranks[this.rank]!,
    );
  }
}

class WorkerWorld extends WorkerProcessGroup implements World {
  readonly collectives = 'sockets';
  constructor(
    channel: CommChannel,
    readonly env: LaunchEnv,
  ) {
    super(
      channel,
      { name: 'world', ranks: Array.from({ length: env.worldSize }, (_, i) => i) },
      env.rank,
    );
  }
  async close(): Promise<void> {
    this.channel.wait(this.channel.request('close', this.spec, new Float32Array(0)));
    await this.channel.worker.terminate();
  }
}

/**
 * The worker script sits next to this module: comm-worker.js in dist (its own tsup entry).
 * Running from TypeScript source (tests, `tsx`), Node 20 workers do not inherit the tsx
 * loader, so a two-line bootstrap registers it first.
 */
function startWorker(options: ConstructorParameters<typeof Worker>[1]): Worker {
  if (!import.meta.url.endsWith('.ts'))
    return new Worker(new URL('./comm-worker.js', import.meta.url), options);
  const tsx = import.meta.resolve('tsx/esm/api');
  const script = new URL('./comm-worker.ts', import.meta.url).href;
  const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(script)}); });`;
  return new Worker(boot, { ...options, eval: true });
}

/**
 * Join the world described by the launcher environment and return its blocking process group.
 * World size 1 needs no connections. Otherwise the collectives run on Gloo when its addon is
 * built (rendezvous store on rank 0 at MASTER_ADDR:MASTER_PORT; see README), or else on the
 * socket transport: a worker thread connects to every rank (Unix sockets within a node, TCP
 * across nodes). Either way calls on the returned group block until done, so they can be made
 * from inside synchronous tfjs gradient functions. `RL2_COLLECTIVES=gloo|sockets` or
 * `options.collectives` forces one; local rank 0 logs one line saying which runs.
 */
export async function initProcessGroup(options: InitProcessGroupOptions = {}): Promise<World> {
  const env = options.env ?? readLaunchEnv();
  if (env.worldSize === 1) {
    const g = new LocalProcessGroup();
    return Object.assign(g, { env, collectives: 'single' as const, close: async () => {} });
  }
  const { timeoutMs, rendezvousTimeoutMs } = resolveTimeouts(options);
  const choice =
    options.collectives ?? parseCollectives(process.env.RL2_COLLECTIVES, 'RL2_COLLECTIVES');
  const log =
    env.localRank === 0 ? (options.logger ?? ((line: string) => console.info(line))) : () => {};
  let fallback = '';
  if (choice !== 'sockets') {
    const load = loadGlooAddon();
    if (load.ok) {
      const world = await joinGlooWorld(load.addon, env, timeoutMs, rendezvousTimeoutMs);
      log(
        `rl2 parallel: collectives on gloo ${load.addon.glooVersion} (tcp), ${env.worldSize} ranks`,
      );
      return world;
    }
    if (choice === 'gloo')
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `RL2_COLLECTIVES=gloo but the gloo addon is unavailable: ${load.reason}.`,
      );
    fallback = `; gloo unavailable: ${load.reason}`;
  }
  log(
    'rl2 parallel: collectives on sockets ' +
      `(${options.transport === 'tcp' ? 'tcp' : 'unix sockets within a node, tcp across'}), ` +
      `${env.worldSize} ranks${fallback}`,
  );
  const { port1, port2 } = new MessageChannel();
  const ctrl = new Int32Array(new SharedArrayBuffer(8));
  const worker = startWorker({
    workerData: {
      env,
      options: { transport: options.transport, timeoutMs, rendezvousTimeoutMs },
      port: port2,
      ctrl,
    },
    transferList: [port2],
  });
  worker.unref(); // a finished program exits even if it forgot close()
  await new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => {
      if (ctrl[0] === 0) return;
      clearInterval(poll);
      if (ctrl[0] === 1) return resolve();
      const m = receiveMessageOnPort(port1)?.message as CommReply | undefined;
      reject(
        m && !m.ok
          ? new ParallelError(m.code as ParallelErrorCode, m.message)
          : new ParallelError('RENDEZVOUS', 'rendezvous failed'),
      );
    }, 5);
    worker.once('error', (e) => {
      clearInterval(poll);
      reject(e);
    });
  });
  worker.removeAllListeners('error');
  worker.on('error', () => {});
  const channel = new CommChannel(worker, port1, ctrl, timeoutMs + 60_000, env.worldSize);
  return new WorkerWorld(channel, env);
}

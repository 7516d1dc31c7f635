import { hostname } from 'node:os';
import { ParallelError } from '../errors.js';
import type { LaunchEnv } from '../launch/read-launch-env.js';
import type { GroupSpec, PendingOp, ProcessGroup, ReduceOp } from './collective.js';
import { groupRank } from './group-rank.js';
import type { World } from './init-process-group.js';
import { resolveGlooHost } from './gloo-host.js';
import { rendezvousNoticeMs } from './socket-rendezvous.js';
import {
  GLOO_FAILURE,
  GLOO_OP,
  GLOO_REDUCE,
  GLOO_STATUS,
  type GlooAddon,
  type GlooFailure,
} from './gloo-addon.js';

const OP_NAMES = new Map<number, string>(Object.entries(GLOO_OP).map(([k, v]) => [v, k]));

/** Names the ranks behind a failed op by asking every rank (through rank 0's store) how far it got. */
function explain(
  addon: GlooAddon,
  me: number,
  spec: GroupSpec,
  key: string,
  op: number,
  f: GlooFailure,
  timeoutMs: number,
): ParallelError {
  const where = `${OP_NAMES.get(op)} #${f.seq} of group '${spec.name}' (ranks [${spec.ranks.join(', ')}])`;
  if (f.failure === GLOO_FAILURE.rendezvous) {
    return new ParallelError(
      'RENDEZVOUS',
      `rank ${me}: connecting group '${spec.name}' (ranks [${spec.ranks.join(', ')}]) failed: ` +
        `${f.message}. Every listed rank must create the group (subgroup with the same ranks and ` +
        'name).',
    );
  }
  let status: number[] | undefined;
  try {
    status = addon.query(key);
  } catch {
    status = undefined; // the store went away with rank 0
  }
  const others = spec.ranks.filter((r) => r !== me);
  if (!status) {
    return new ParallelError(
      'PEER_LOST',
      `rank ${me} lost rank 0 (its rendezvous store is gone) during ${where} (gloo: ${f.message}); rank 0 probably failed: see its error.`,
    );
  }
  const gone = others.filter(
    (r) => status[r] === GLOO_STATUS.gone || status[r] === GLOO_STATUS.neverJoined,
  );
  if (gone.length) {
    const s = gone.length > 1 ? 's' : '';
    return new ParallelError(
      'PEER_LOST',
      `rank ${me} lost rank${s} [${gone.join(', ')}] (process ended) during ${where}; rank${s} ` +
        `[${gone.join(', ')}] probably failed: see ` +
        `${gone.length > 1 ? 'their errors' : 'its error'}.`,
    );
  }
  const missing = others.filter((r) => (status[r] ?? -1) <= f.seq);
  if (f.failure === GLOO_FAILURE.timeout) {
    const why = missing.length
      ? `rank${missing.length > 1 ? 's' : ''} [${missing.join(', ')}] never reached it`
      : `every rank reached it but the data did not arrive (gloo: ${f.message})`;
    return new ParallelError(
      'COLLECTIVE_TIMEOUT',
      `rank ${me}: ${where} timed out after ${timeoutMs} ms: ${why}. Check that rank's log; ` +
        'raise the limit with RL2_COLLECTIVE_TIMEOUT_MS if it is only slow.',
    );
  }
  return new ParallelError(
    'PEER_LOST',
    `rank ${me}: ${where} failed: ` +
      `${f.message}${missing.length ? `; ranks [${missing.join(', ')}] had not reached it` : ''}. ` +
      `Check the other ranks' errors.`,
  );
}

/**
 * A process group on Gloo (native/rl2_gloo.node): ops run on the group's native thread, on the
 * caller's own Float32Arrays (no copies); blocking calls wait for it, `i*` calls return at once.
 */
export class GlooProcessGroup implements ProcessGroup {
  readonly rank: number;
  readonly size: number;
  protected readonly handle: number;
  protected readonly key: string;

  constructor(
    protected readonly addon: GlooAddon,
    readonly spec: GroupSpec,
    protected readonly globalRank: number,
    protected readonly worldSize: number,
    protected readonly timeoutMs: number,
  ) {
    this.rank = groupRank(spec, globalRank);
    this.size = spec.ranks.length;
    this.key = `${spec.name}[${spec.ranks.join(',')}]`;
    this.handle = addon.group(this.key, this.rank, this.size);
  }

  private start(
    op: number,
    input: Float32Array,
    output: Float32Array | null,
    arg: number,
  ): () => void {
    const ticket = this.addon.submit(this.handle, op, input, output, arg);
    return () => {
      const f = this.addon.wait(this.handle, ticket);
      if (f) throw explain(this.addon, this.globalRank, this.spec, this.key, op, f, this.timeoutMs);
    };
  }

  /** Connects the group now (normally the first op does); throws RENDEZVOUS on failure. */
  connect(): void {
    this.start(GLOO_OP.connect, new Float32Array(0), null, 0)();
  }

  allReduce(buf: Float32Array, op: ReduceOp = 'sum'): Float32Array {
    return this.iallReduce(buf, op).wait();
  }
  allGather(buf: Float32Array): Float32Array {
    return this.iallGather(buf).wait();
  }
  reduceScatter(buf: Float32Array, op: ReduceOp = 'sum'): Float32Array {
    return this.ireduceScatter(buf, op).wait();
  }
  broadcast(buf: Float32Array, root: number): Float32Array {
    this.checkPeer(root, 'broadcast root');
    if (this.size > 1 && buf.length > 0) this.start(GLOO_OP.broadcast, buf, null, root)();
    return buf;
  }
  barrier(): void {
    if (this.size > 1) this.start(GLOO_OP.barrier, new Float32Array(0), null, 0)();
  }
  send(buf: Float32Array, peer: number): void {
    this.checkPeer(peer, 'send peer', true);
    this.start(GLOO_OP.send, buf, null, peer)();
  }
  recv(buf: Float32Array, peer: number): Float32Array {
    this.checkPeer(peer, 'recv peer', true);
    this.start(GLOO_OP.recv, buf, null, peer)();
    return buf;
  }
  iallReduce(buf: Float32Array, op: ReduceOp = 'sum'): PendingOp<Float32Array> {
    if (this.size === 1 || buf.length === 0) return { wait: () => buf };
    const done = this.start(GLOO_OP.allReduce, buf, null, GLOO_REDUCE[op]);
    return {
      wait: () => {
        done();
        return buf;
      },
    };
  }
  iallGather(buf: Float32Array): PendingOp<Float32Array> {
    if (this.size === 1 || buf.length === 0) {
      const copy = buf.slice();
      return { wait: () => copy };
    }
    const out = new Float32Array(buf.length * this.size);
    const done = this.start(GLOO_OP.allGather, buf, out, 0);
    return {
      wait: () => {
        done();
        return out;
      },
    };
  }
  ireduceScatter(buf: Float32Array, op: ReduceOp = 'sum'): PendingOp<Float32Array> {
    if (buf.length % this.size !== 0) {
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `reduceScatter on group '${this.spec.name}': buffer length ${buf.length} is not a multiple of the group size ${this.size}; pad it.`,
      );
    }
    if (this.size === 1 || buf.length === 0) {
      const copy = buf.slice();
      return { wait: () => copy };
    }
    const out = new Float32Array(buf.length / this.size);
    const done = this.start(GLOO_OP.reduceScatter, buf, out, GLOO_REDUCE[op]);
    return {
      wait: () => {
        done();
        return out;
      },
    };
  }
  subgroup(ranks: readonly number[], name: string): ProcessGroup {
    for (const r of ranks) {
      if (!Number.isInteger(r) || r < 0 || r >= this.worldSize) {
        throw new ParallelError(
          'INVALID_ARGUMENT',
          `subgroup '${name}': rank ${r} is not a world rank (world size ${this.worldSize}).`,
        );
      }
    }
    return new GlooProcessGroup(
      this.addon,
      { name, ranks: [...ranks] },
      this.globalRank,
      this.worldSize,
      this.timeoutMs,
    );
  }

  private checkPeer(peer: number, what: string, notSelf = false): void {
    if (
      !Number.isInteger(peer) ||
      peer < 0 ||
      peer >= this.size ||
      (notSelf && peer === this.rank)
    ) {
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `${what}=${peer} is not ${notSelf ? 'another' : 'a'} rank of group '${this.spec.name}' (size ${this.size}).`,
      );
    }
  }
}

/** The world on Gloo; `close()` ends every group, the store connection and (rank 0) the store. */
class GlooWorld extends GlooProcessGroup implements World {
  readonly collectives = 'gloo';
  constructor(
    addon: GlooAddon,
    readonly env: LaunchEnv,
    timeoutMs: number,
  ) {
    super(
      addon,
      { name: 'world', ranks: Array.from({ length: env.worldSize }, (_, r) => r) },
      env.rank,
      env.worldSize,
      timeoutMs,
    );
  }
  async close(): Promise<void> {
    this.addon.close();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

const RANK_KEY = 'rl2/rank/';
/** Where rank 0's Gloo store leaves the card of a rank running the socket collectives (store-server.cc). */
const REFUSED_KEY = 'rl2/refused';

/**
 * Waits until every rank checked in; fails at once when a rank running the socket collectives
 * came, at the deadline naming the missing ranks, and says for whom it waits meanwhile.
 */
async function awaitRanks(addon: GlooAddon, env: LaunchEnv, at: string, timeoutMs: number) {
  const keys = Array.from({ length: env.worldSize }, (_, r) => `${RANK_KEY}${r}`);
  const start = Date.now();
  const noticeMs = rendezvousNoticeMs(timeoutMs);
  let noticed = start;
  for (let pause = 1; ; pause = Math.min(pause * 2, 100)) {
    const missing = addon.storeMissing([...keys, REFUSED_KEY]);
    if (!missing.includes(REFUSED_KEY)) {
      const card = JSON.parse(addon.storeGet(REFUSED_KEY)) as { rank?: number };
      throw new ParallelError(
        'RENDEZVOUS',
        `rank ${env.rank} runs the Gloo collectives but rank ${card.rank ?? '?'} runs the ` +
          `socket collectives (it reached the rendezvous at ${at}); start every rank with the ` +
          'same RL2_COLLECTIVES (gloo or sockets; auto picks gloo only where the Gloo addon is ' +
          'built, so set it explicitly when nodes differ).',
      );
    }
    const ranks = missing.filter((k) => k !== REFUSED_KEY).map((k) => k.slice(RANK_KEY.length));
    if (!ranks.length) return;
    const now = Date.now();
    if (now - start > timeoutMs) {
      throw new ParallelError(
        'RENDEZVOUS',
        `rank ${env.rank}: ranks [${ranks.join(', ')}] never reached the rendezvous at ${at} ` +
          `within ${timeoutMs} ms; check that every node was started (RL2_RENDEZVOUS_TIMEOUT_MS ` +
          'sets the limit).',
      );
    }
    if (env.rank === 0 && now - noticed >= noticeMs) {
      noticed = now;
      process.stderr.write(
        `rank 0: waiting at the rendezvous at ${at} for ranks [${ranks.join(', ')}] ` +
          `(${Math.round((timeoutMs - (now - start)) / 1000)} s left of RL2_RENDEZVOUS_TIMEOUT_MS)\n`,
      );
    }
    await sleep(pause);
  }
}

/**
 * Join the world on Gloo: rank 0 serves the rendezvous store at MASTER_ADDR:MASTER_PORT, every
 * rank checks in (same WORLD_SIZE, one process per RANK), then the world group connects.
 */
export async function joinGlooWorld(
  addon: GlooAddon,
  env: LaunchEnv,
  timeoutMs: number,
  rendezvousTimeoutMs: number,
): Promise<World> {
  const at = `MASTER_ADDR=${env.masterAddr} MASTER_PORT=${env.masterPort}`;
  const glooHost = await resolveGlooHost(process.env.RL2_GLOO_HOST);
  if (env.rank === 0) {
    try {
      addon.host(env.masterPort, env.worldSize);
    } catch (e) {
      throw new ParallelError(
        'RENDEZVOUS',
        `rank 0 cannot listen on MASTER_PORT=${env.masterPort} (${(e as Error).message}); pick a free port with --master-port.`,
      );
    }
  }
  try {
    addon.connect(
      env.masterAddr,
      env.masterPort,
      env.rank,
      timeoutMs,
      rendezvousTimeoutMs,
      glooHost,
    );
  } catch (e) {
    throw new ParallelError(
      'RENDEZVOUS',
      `rank ${env.rank}: cannot reach the rendezvous at ${at} (${(e as Error).message}); check ` +
        'that rank 0 started and the address is reachable.',
    );
  }
  const me = JSON.stringify({ worldSize: env.worldSize, host: hostname(), pid: process.pid });
  try {
    addon.storeSet(`${RANK_KEY}${env.rank}`, me);
  } catch (e) {
    // a rank 0 running the socket collectives refuses this rank, saying so
    throw new ParallelError('RENDEZVOUS', `rank ${env.rank}: ${(e as Error).message}`);
  }
  await awaitRanks(addon, env, at, rendezvousTimeoutMs);
  const first = JSON.parse(addon.storeGet(`${RANK_KEY}0`)) as { worldSize: number };
  if (first.worldSize !== env.worldSize) {
    throw new ParallelError(
      'RENDEZVOUS',
      `rank ${env.rank} has WORLD_SIZE=${env.worldSize} but rank 0 has ${first.worldSize}; start ` +
        'every node with the same --nnodes and --nproc-per-node.',
    );
  }
  if (addon.storeGet(`${RANK_KEY}${env.rank}`) !== me) {
    throw new ParallelError(
      'RENDEZVOUS',
      `two processes claim RANK=${env.rank}; give every node a different --node-rank.`,
    );
  }
  const world = new GlooWorld(addon, env, timeoutMs);
  world.connect();
  return world;
}

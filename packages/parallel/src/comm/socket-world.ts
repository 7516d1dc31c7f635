import { hostname } from 'node:os';
import type { LaunchEnv } from '../launch/read-launch-env.js';
import type { Collective, GroupSpec } from './collective.js';
import { PeerMesh, type Transport } from './peer-mesh.js';
import {
  type ArrivalBook,
  DEFAULT_COLLECTIVE_TIMEOUT_MS,
  SocketCollective,
} from './socket-collective.js';

export interface SocketWorldOptions {
  /** `auto` (default): Unix-domain sockets between ranks of one node, TCP between nodes. `tcp`: TCP everywhere. */
  transport?: Transport;
  /** Per-collective timeout (default RL2_COLLECTIVE_TIMEOUT_MS or 300 000 ms). */
  timeoutMs?: number;
  /** Time for all ranks to meet (default RL2_RENDEZVOUS_TIMEOUT_MS or 300 000 ms). */
  rendezvousTimeoutMs?: number;
}

/** The async collectives of every rank, connected; make sub-groups from it. */
export interface SocketWorld {
  readonly env: LaunchEnv;
  readonly world: Collective;
  subgroup(ranks: readonly number[], name: string): Collective;
  close(): void;
}

function envMs(key: string): number | undefined {
  const v = Number(process.env[key]);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

/** Resolved timeouts: option, else environment, else default. */
export function resolveTimeouts(o: SocketWorldOptions): {
  timeoutMs: number;
  rendezvousTimeoutMs: number;
} {
  return {
    timeoutMs: o.timeoutMs ?? envMs('RL2_COLLECTIVE_TIMEOUT_MS') ?? DEFAULT_COLLECTIVE_TIMEOUT_MS,
    rendezvousTimeoutMs: o.rendezvousTimeoutMs ?? envMs('RL2_RENDEZVOUS_TIMEOUT_MS') ?? 300_000,
  };
}

/**
 * Connect this rank to every other rank (rendezvous at MASTER_ADDR:MASTER_PORT) and return
 * asynchronous collectives. Use this on an event loop (benchmarks, data-parallel statistics);
 * compute code that must block uses `initProcessGroup`, which runs this in a worker thread.
 */
export async function createSocketWorld(
  env: LaunchEnv,
  options: SocketWorldOptions = {},
): Promise<SocketWorld> {
  const { timeoutMs, rendezvousTimeoutMs } = resolveTimeouts(options);
  const mesh = await PeerMesh.connect({
    rank: env.rank,
    worldSize: env.worldSize,
    masterAddr: env.masterAddr,
    masterPort: env.masterPort,
    nodeId: `${hostname()}/${env.nodeRank}`,
    transport: options.transport ?? 'auto',
    rendezvousTimeoutMs,
  });
  const book: ArrivalBook = new Map();
  SocketCollective.trackArrivals(mesh, book);
  const groups = new Map<string, SocketCollective>();
  const subgroup = (ranks: readonly number[], name: string): Collective => {
    const spec: GroupSpec = { name: `${name}[${ranks.join(',')}]`, ranks: [...ranks] };
    const g = groups.get(spec.name) ?? new SocketCollective(mesh, spec, book, timeoutMs);
    groups.set(spec.name, g);
    return g;
  };
  const world = subgroup(
    Array.from({ length: env.worldSize }, (_, i) => i),
    'world',
  );
  return { env, world, subgroup, close: () => mesh.close() };
}

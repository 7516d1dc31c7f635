import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ParallelError } from '../errors.js';
import { type Frame, FrameReader, frameHeader } from './frame-reader.js';
import { dial, listen, register, startStore } from './socket-rendezvous.js';

/** `unix`: Unix-domain sockets between ranks of one node, TCP across nodes (`auto`, the default). */
export type Transport = 'auto' | 'tcp';

export interface PeerMeshOptions {
  rank: number;
  worldSize: number;
  masterAddr: string;
  masterPort: number;
  /** Ranks with equal nodeId are on one host and may use Unix sockets. */
  nodeId: string;
  transport?: Transport;
  rendezvousTimeoutMs?: number;
}

export interface Card {
  rank: number;
  worldSize: number;
  host: string;
  tcpPort: number;
  unixPath?: string;
  nodeId: string;
}

export const FRAME_HELLO = 0;
export const FRAME_DATA = 1;
export const FRAME_ARRIVE = 2;

/** A connected socket; accepted ones carry the frames received after the hello. */
interface Link {
  sock: Socket;
  sink?: (f: Frame) => void;
  held?: Frame[];
}

interface Waiter {
  resolve: (p: Uint8Array) => void;
  reject: (e: Error) => void;
}

/**
 * A fully connected mesh of sockets between the world's ranks, set up by a rendezvous at
 * MASTER_ADDR:MASTER_PORT (rank 0 listens there, collects every rank's address card, hands the
 * table out), then rank i dials every rank j < i. Messages are keyed frames queued per peer;
 * a closed peer fails every receive waiting on it at once, so nothing hangs.
 */
export class PeerMesh {
  private readonly inbox = new Map<number, Map<string, Uint8Array[]>>();
  private readonly waiters = new Map<number, Map<string, Waiter>>();
  private readonly lost = new Map<number, string>();
  private closing = false;
  private arriveHandler: ((peer: number, key: string) => void) | undefined;
  /** Arrival notices that came before a handler was set (peers may start an op while we finish connecting). */
  private readonly earlyArrivals: [number, string][] = [];

  /** Handle FRAME_ARRIVE frames (op-arrival notices used to name missing ranks); replays earlier ones. */
  setArrivalHandler(fn: (peer: number, key: string) => void): void {
    this.arriveHandler = fn;
    for (const [peer, key] of this.earlyArrivals.splice(0)) fn(peer, key);
  }

  private constructor(
    readonly rank: number,
    readonly worldSize: number,
    links: Map<number, Link>,
  ) {
    this.sockets = new Map([...links].map(([peer, l]) => [peer, l.sock]));
    for (const [peer, link] of links) this.attach(peer, link);
  }

  private readonly sockets: Map<number, Socket>;

  static async connect(o: PeerMeshOptions): Promise<PeerMesh> {
    const deadline = Date.now() + (o.rendezvousTimeoutMs ?? 300_000);
    const unixPath =
      o.transport === 'tcp'
        ? undefined
        : join(tmpdir(), `rl2-${process.pid}-${randomBytes(4).toString('hex')}.sock`);
    const accepted = new Map<number, Link>();
    const pendingAccepts: (() => void)[] = [];
    const onConn = (sock: Socket) => {
      sock.setNoDelay(true);
      sock.on('error', () => {});
      const held: Frame[] = [];
      let peer = -1;
      const link: Link = { sock, sink: (f) => held.push(f), held };
      const reader = new FrameReader();
      sock.on('data', (chunk: Buffer) =>
        reader.push(chunk, (f) => {
          if (peer >= 0) return link.sink!(f);
          if (f.type !== FRAME_HELLO) return;
          peer = Number(f.key);
          accepted.set(peer, link);
          for (const p of pendingAccepts) p();
        }),
      );
    };
    const servers: Server[] = [await listen(createServer(onConn), { port: 0, host: '0.0.0.0' })];
    if (unixPath) servers.push(await listen(createServer(onConn), { path: unixPath }));
    const tcpPort = (servers[0]!.address() as { port: number }).port;
    const store = o.rank === 0 ? await startStore(o, deadline) : undefined;
    try {
      const table = await register(
        o,
        { rank: o.rank, worldSize: o.worldSize, host: '', tcpPort, unixPath, nodeId: o.nodeId },
        deadline,
      );
      const sockets = new Map<number, Link>();
      const dials = table
        .filter((c) => c.rank < o.rank)
        .map(async (c) => {
          const local = o.transport !== 'tcp' && c.unixPath && c.nodeId === o.nodeId;
          const sock = await dial(
            local ? { path: c.unixPath! } : { host: c.host, port: c.tcpPort },
            deadline,
            `rank ${c.rank} at ${local ? c.unixPath : `${c.host}:${c.tcpPort}`}`,
          );
          sock.write(frameHeader(FRAME_HELLO, String(o.rank), 0));
          sockets.set(c.rank, { sock });
        });
      await Promise.all(dials);
      const expected = o.worldSize - 1 - o.rank;
      await new Promise<void>((resolve, reject) => {
        const check = () => {
          if ([...accepted.keys()].filter((p) => p > o.rank).length < expected) return;
          clearTimeout(t);
          resolve();
        };
        const t = setTimeout(
          () => {
            const missing = table
              .filter((c) => c.rank > o.rank && !accepted.has(c.rank))
              .map((c) => c.rank);
            reject(
              new ParallelError(
                'RENDEZVOUS',
                `rank ${o.rank}: ranks [${missing.join(', ')}] never connected to it; check firewalls between nodes.`,
              ),
            );
          },
          Math.max(0, deadline - Date.now()),
        );
        pendingAccepts.push(check);
        check();
      });
      for (const [peer, link] of accepted) sockets.set(peer, link);
      return new PeerMesh(o.rank, o.worldSize, sockets);
    } finally {
      for (const s of servers) s.close();
      if (unixPath) rmSync(unixPath, { force: true });
      store?.close();
    }
  }

  private attach(peer: number, link: Link): void {
    const sock = link.sock;
    if (link.sink) {
      // accepted socket: its reader already runs; frames that came right after the hello were held
      link.sink = (f) => this.deliver(peer, f);
      for (const f of link.held!.splice(0)) this.deliver(peer, f);
    } else {
      const reader = new FrameReader();
      sock.on('data', (chunk: Buffer) => reader.push(chunk, (f) => this.deliver(peer, f)));
    }
    const gone = (why: string) => {
      if (this.lost.has(peer)) return;
      this.lost.set(peer, why);
      const ws = this.waiters.get(peer);
      if (!ws) return;
      for (const [key, w] of ws) w.reject(this.lostError(peer, key));
      ws.clear();
    };
    sock.on('error', (e) => gone(e.message));
    sock.on('close', () => gone('connection closed'));
    if (sock.destroyed || sock.readableEnded) gone('connection closed during the rendezvous');
  }

  /**
   * PEER_LOST for a wait on `peer`. When other ranks went first (a rank waiting on rank 0 in a
   * ring while rank 3 exits: rank 0 then fails and closes too), they are named first: the first
   * rank lost is the one that probably failed.
   */
  private lostError(peer: number, key: string): ParallelError {
    const order = [...this.lost.keys()]; // insertion order: the order they were lost
    const why = this.lost.get(peer);
    return new ParallelError(
      'PEER_LOST',
      order.length > 1
        ? `rank ${this.rank} lost ranks [${order.join(', ')}] (in that order; rank ${peer}: ` +
            `${why}) while waiting for ${key} from rank ${peer}; rank ${order[0]} probably failed ` +
            'first: see its error.'
        : `rank ${this.rank} lost rank ${peer} (${why}) while waiting for ${key}; rank ${peer} probably failed: see its error.`,
    );
  }

  private deliver(peer: number, f: Frame): void {
    if (f.type === FRAME_ARRIVE) {
      if (this.arriveHandler) this.arriveHandler(peer, f.key);
      else this.earlyArrivals.push([peer, f.key]);
      return;
    }
    const w = this.waiters.get(peer)?.get(f.key);
    if (w) {
      this.waiters.get(peer)!.delete(f.key);
      w.resolve(f.payload);
      return;
    }
    const box = this.inbox.get(peer) ?? new Map<string, Uint8Array[]>();
    this.inbox.set(peer, box);
    const q = box.get(f.key);
    if (q) q.push(f.payload);
    else box.set(f.key, [f.payload]);
  }

  /** Send bytes on channel `key`; resolves when the socket has taken them (safe to reuse). */
  send(peer: number, key: string, payload: Uint8Array, type = FRAME_DATA): Promise<void> {
    const sock = this.sockets.get(peer);
    if (!sock)
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `rank ${this.rank} has no connection to rank ${peer} (world size ${this.worldSize}).`,
      );
    if (this.lost.has(peer)) return Promise.reject(this.lostError(peer, key));
    sock.write(frameHeader(type, key, payload.byteLength));
    return new Promise((resolve) => {
      if (payload.byteLength === 0) return resolve();
      sock.write(payload, () => resolve());
    });
  }

  /** Next payload from `peer` on channel `key`. Rejects with PEER_LOST if the peer goes away. */
  recv(peer: number, key: string): { promise: Promise<Uint8Array>; cancel: () => void } {
    const q = this.inbox.get(peer)?.get(key);
    if (q?.length) {
      const p = q.shift()!;
      if (!q.length) this.inbox.get(peer)!.delete(key);
      return { promise: Promise.resolve(p), cancel: () => {} };
    }
    if (this.lost.has(peer))
      return { promise: Promise.reject(this.lostError(peer, key)), cancel: () => {} };
    const ws = this.waiters.get(peer) ?? new Map<string, Waiter>();
    this.waiters.set(peer, ws);
    if (ws.has(key))
      throw new ParallelError(
        'INVALID_ARGUMENT',
        `two receives from rank ${peer} on ${key} at once.`,
      );
    const map = ws;
    const promise = new Promise<Uint8Array>((resolve, reject) => map.set(key, { resolve, reject }));
    return { promise, cancel: () => map.delete(key) };
  }

  isLost(peer: number): boolean {
    return this.lost.has(peer);
  }

  close(): void {
    if (this.closing) return;
    this.closing = true;
    for (const s of this.sockets.values()) s.end();
  }
}

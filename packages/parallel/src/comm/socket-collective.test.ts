import { describe, expect, it } from 'vitest';
import { freePort } from '../../test/run-ranks.js';
import { FRAME_ARRIVE, PeerMesh } from './peer-mesh.js';
import { type ArrivalBook, SocketCollective } from './socket-collective.js';

// Two or three ranks inside one process (each mesh is just sockets on this event loop).
async function meshes(n: number): Promise<PeerMesh[]> {
  const masterPort = await freePort();
  return Promise.all(
    Array.from({ length: n }, (_, rank) =>
      PeerMesh.connect({
        rank,
        worldSize: n,
        masterAddr: '127.0.0.1',
        masterPort,
        nodeId: 'test',
        rendezvousTimeoutMs: 10_000,
      }),
    ),
  );
}

function collectives(ms: PeerMesh[], timeoutMs: number): SocketCollective[] {
  const spec = { name: 'world', ranks: ms.map((_, i) => i) };
  return ms.map((m) => {
    const book: ArrivalBook = new Map();
    SocketCollective.trackArrivals(m, book);
    return new SocketCollective(m, spec, book, timeoutMs);
  });
}

describe('SocketCollective in one process', () => {
  it('all-reduces over a ring of 3', async () => {
    const ms = await meshes(3);
    const cs = collectives(ms, 10_000);
    const out = await Promise.all(
      cs.map((c, r) => c.allReduce(Float32Array.of(r, 1, 2 * r, 5), 'sum')),
    );
    for (const o of out) expect([...o]).toEqual([3, 3, 6, 15]);
    for (const m of ms) m.close();
  });

  it('replays op-arrival notices that came before the handler was set', async () => {
    const [a, b] = await meshes(2);
    await b!.send(0, 'world#0', new Uint8Array(0), FRAME_ARRIVE);
    await new Promise((r) => setTimeout(r, 50));
    const seen: string[] = [];
    a!.setArrivalHandler((peer, key) => seen.push(`${peer}:${key}`));
    expect(seen).toEqual(['1:world#0']);
    a!.close();
    b!.close();
  });

  it('a timeout names the rank that never reached the op', async () => {
    const ms = await meshes(3);
    const [c0, , c2] = collectives(ms, 300);
    const results = await Promise.allSettled([
      c0!.allReduce(new Float32Array(4)),
      c2!.allReduce(new Float32Array(4)),
    ]);
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason.message).toMatch(
        /allReduce #0 of group 'world' .* timed out after 300 ms: rank \[1\] never reached it/,
      );
    }
    for (const m of ms) m.close();
  });

  it('a lost peer fails the waiting op at once with PEER_LOST', async () => {
    const ms = await meshes(2);
    const [c0] = collectives(ms, 10_000);
    const pending = c0!.allReduce(new Float32Array(4));
    ms[1]!.close();
    await expect(pending).rejects.toMatchObject({ code: 'PEER_LOST' });
    ms[0]!.close();
  });
});

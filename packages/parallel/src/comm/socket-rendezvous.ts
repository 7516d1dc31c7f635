import { type Server, type Socket, connect, createServer } from 'node:net';
import { ParallelError } from '../errors.js';
import type { Card, PeerMeshOptions } from './peer-mesh.js';

/** How often a rank waiting at the rendezvous says for whom (at most; a third of the timeout when shorter). */
const NOTICE_MS = 10_000;

/** The period of "waiting for ranks" lines for a rendezvous timeout of `timeoutMs`. */
export function rendezvousNoticeMs(timeoutMs: number): number {
  return Math.max(200, Math.min(NOTICE_MS, timeoutMs / 3));
}

/** What every rank of a job must share; told to a rank that runs other collectives. */
const SAME_COLLECTIVES =
  'start every rank with the same RL2_COLLECTIVES (gloo or sockets; auto picks gloo only where ' +
  'the Gloo addon is built, so set it explicitly when nodes differ)';

/** A frame of the Gloo store protocol (store-server.cc): type 'X' refuses, the payload says why. */
function glooRefusal(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const head = Buffer.alloc(5);
  head.write('X', 0, 'latin1');
  head.writeUInt32LE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** The rank a Gloo store message names: 'H' (status channel: u32 rank) or 'S' of key rl2/rank/N. */
function glooRank(d: Buffer): number | undefined {
  if (d.length >= 9 && d[0] === 0x48) return d.readUInt32LE(5);
  if (d.length < 9 || d[0] !== 0x53) return undefined;
  const key = d.subarray(9, 9 + d.readUInt32LE(5)).toString('utf8');
  const m = /^rl2\/rank\/(\d+)$/.exec(key);
  return m ? Number(m[1]) : undefined;
}

/**
 * Rank 0's rendezvous store: collect one card per rank, then send everyone the table. A rank
 * that speaks the Gloo store protocol (it runs the Gloo collectives) is refused at once and the
 * socket ranks fail naming it; at the deadline every waiting rank is told which ranks never came.
 */
export async function startStore(o: PeerMeshOptions, deadline: number): Promise<Server> {
  const cards = new Map<number, { card: Card; sock: Socket }>();
  const at = `MASTER_ADDR=${o.masterAddr} MASTER_PORT=${o.masterPort}`;
  let refused: string | undefined; // once set, every rank that comes gets it
  const fail = (msg: string) => {
    refused ??= msg;
    for (const { sock } of cards.values()) sock.end(`${JSON.stringify({ error: msg })}\n`);
  };
  const missing = () =>
    Array.from({ length: o.worldSize }, (_, r) => r).filter((r) => !cards.has(r));
  const server = createServer((sock) => {
    let text = '';
    sock.on('error', () => {});
    sock.on('data', (d) => {
      if (text === '' && d[0] !== 0x7b) {
        const from = (sock.remoteAddress ?? '').replace(/^::ffff:/, '');
        sock.end(
          glooRefusal(
            `this rank runs the Gloo collectives but rank 0 at ${at} runs the socket ` +
              `collectives; ${SAME_COLLECTIVES}.`,
          ),
        );
        const rank = glooRank(d);
        // fail (and so exit) only once the Gloo rank has read its refusal and hung up: a process
        // that exits first can reset the connection and the refusal is lost ("store connection closed")
        const failOnce = once(() =>
          fail(
            `rank 0 runs the socket collectives but rank ${rank ?? '?'} runs the Gloo ` +
              `collectives (it reached the rendezvous at ${at} from ${from}); ${SAME_COLLECTIVES}.`,
          ),
        );
        const timer = setTimeout(failOnce, 2000);
        sock.once('close', () => {
          clearTimeout(timer);
          failOnce();
        });
        return;
      }
      text += d.toString('utf8');
      if (!text.includes('\n')) return;
      let card: Card;
      try {
        card = JSON.parse(text.slice(0, text.indexOf('\n'))) as Card;
      } catch {
        return void sock.destroy();
      }
      if (refused) return void sock.end(`${JSON.stringify({ error: refused })}\n`);
      card.host =
        card.rank === 0 ? o.masterAddr : (sock.remoteAddress ?? '').replace(/^::ffff:/, '');
      if (card.worldSize !== o.worldSize) {
        const error =
          `rank ${card.rank} has WORLD_SIZE=${card.worldSize} but rank 0 has ${o.worldSize}; ` +
          'start every node with the same --nnodes and --nproc-per-node.';
        sock.end(`${JSON.stringify({ error })}\n`);
        return;
      }
      if (cards.has(card.rank)) {
        fail(`two processes claim RANK=${card.rank}; give every node a different --node-rank.`);
        return;
      }
      cards.set(card.rank, { card, sock });
      if (cards.size === o.worldSize) {
        clearInterval(notice);
        const table = JSON.stringify({
          table: [...cards.values()].map((c) => c.card).sort((a, b) => a.rank - b.rank),
        });
        for (const { sock: s } of cards.values()) s.end(`${table}\n`);
      }
    });
  });
  try {
    await listen(server, { port: o.masterPort, host: '0.0.0.0' });
  } catch (e) {
    throw new ParallelError(
      'RENDEZVOUS',
      `rank 0 cannot listen on MASTER_PORT=${o.masterPort} (${(e as Error).message}); pick a free port with --master-port.`,
    );
  }
  const limit = deadline - Date.now();
  const notice = setInterval(() => {
    if (!refused)
      process.stderr.write(
        `rank 0: waiting at the rendezvous at ${at} for ranks [${missing().join(', ')}] ` +
          `(${Math.round((deadline - Date.now()) / 1000)} s left of RL2_RENDEZVOUS_TIMEOUT_MS)\n`,
      );
  }, rendezvousNoticeMs(limit));
  notice.unref();
  const t = setTimeout(
    () => {
      clearInterval(notice);
      if (cards.size < o.worldSize)
        fail(
          `ranks [${missing().join(', ')}] never reached the rendezvous at ${at} within ` +
            `${Math.round(limit)} ms; check that every node was started (RL2_RENDEZVOUS_TIMEOUT_MS ` +
            'sets the limit).',
        );
      server.close();
    },
    Math.max(0, limit),
  );
  t.unref();
  server.on('close', () => {
    clearTimeout(t);
    clearInterval(notice);
  });
  return server;
}

/** Joins the rendezvous with this rank's `card`; resolves with every rank's card. */
export async function register(o: PeerMeshOptions, card: Card, deadline: number): Promise<Card[]> {
  const at = `MASTER_ADDR=${o.masterAddr} MASTER_PORT=${o.masterPort}`;
  const sock = await dial(
    { host: o.masterAddr, port: o.masterPort },
    deadline,
    `the rendezvous at ${at}`,
  );
  sock.write(`${JSON.stringify(card)}\n`);
  return new Promise((resolve, reject) => {
    let text = '';
    // later than rank 0's own deadline, so that its message naming the missing ranks comes first
    const t = setTimeout(
      () => {
        sock.destroy();
        reject(
          new ParallelError(
            'RENDEZVOUS',
            `rank ${o.rank}: rank 0 at ${at} did not hand out the table of the ${o.worldSize} ` +
              'ranks before the rendezvous timeout; check that every node was started.',
          ),
        );
      },
      Math.max(0, deadline - Date.now()) + 2000,
    );
    t.unref();
    sock.on('data', (d) => {
      text += d.toString('utf8');
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      clearTimeout(t);
      const line = text.split('\n')[0] ?? '';
      if (!line)
        return reject(
          new ParallelError(
            'RENDEZVOUS',
            `rank ${o.rank}: the rendezvous at ${at} closed before every rank joined (rank 0 gone?).`,
          ),
        );
      const msg = JSON.parse(line) as { table?: Card[]; error?: string; collectives?: string };
      if (msg.collectives)
        reject(
          new ParallelError(
            'RENDEZVOUS',
            `rank ${o.rank} runs the socket collectives but rank 0 at ${at} runs ` +
              `${msg.collectives}; ${SAME_COLLECTIVES}.`,
          ),
        );
      else if (msg.error) reject(new ParallelError('RENDEZVOUS', `rank ${o.rank}: ${msg.error}`));
      else resolve(msg.table!);
    });
  });
}

export function listen(
  server: Server,
  at: { port: number; host: string } | { path: string },
): Promise<Server> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at, () => {
      server.removeListener('error', reject);
      resolve(server);
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export async function dial(
  at: { host: string; port: number } | { path: string },
  deadline: number,
  what: string,
): Promise<Socket> {
  let last = '';
  while (Date.now() < deadline) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const s = connect(at as never, () => {
          s.removeListener('error', reject);
          s.on('error', () => {}); // until the mesh attaches; a reset then shows up as 'close'
          s.setNoDelay(true);
          resolve(s);
        });
        s.once('error', reject);
      });
    } catch (e) {
      last = (e as Error).message;
      await sleep(100);
    }
  }
  throw new ParallelError(
    'RENDEZVOUS',
    `cannot reach ${what} before the rendezvous timeout (${last || 'timed out'}).`,
  );
}

/** `fn` run at most once, whoever calls first. */
function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

// pnpm bench parallel: all-reduce bandwidth on 2 and 4 local processes over Unix sockets
// (`auto`) and TCP loopback, through the blocking ProcessGroup (worker thread) and the async
// Collective (main thread), next to a memcpy of the same buffer measured in the same run.
// algbw = bytes / time; busbw = algbw * 2(n-1)/n (what each link carries in a ring, as
// nccl-tests report it). Tokens/s for 1/2/4 processes needs the trainers and is not here yet.
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { launch } from '../src/index.js';

interface Row {
  ranks: number;
  bytes: number;
  ms: number;
  memcpyMs: number;
}

const fmtBytes = (b: number) => (b >= 2 ** 20 ? `${b / 2 ** 20} MiB` : `${b / 2 ** 10} KiB`);
const gbs = (bytes: number, ms: number) => bytes / (ms / 1000) / 1e9;

async function run(ranks: number, transport: 'auto' | 'tcp', path: 'blocking' | 'async', port: number): Promise<Row[]> {
  const rows: Row[] = [];
  await launch({
    nprocPerNode: ranks,
    masterPort: port,
    output: 'silent',
    env: { BENCH_TRANSPORT: transport, BENCH_PATH: path },
    command: [process.execPath, '--import', 'tsx', join(import.meta.dirname, 'allreduce-rank.ts')],
    onOutput: (_r, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT ')) rows.push(JSON.parse(line.slice(7)) as Row);
    },
  });
  return rows;
}

console.log(`all-reduce (sum, float32) on ${cpus().length} CPU cores, Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} at start`);
console.log('(the ranks, their worker threads and everything else on the machine share these cores: read the ratios, not the absolute times)\n');
console.log('| ranks | path | transport | size | all-reduce | algbw GB/s | busbw GB/s | memcpy | memcpy GB/s | all-reduce / memcpy time |');
console.log('|---:|---|---|---:|---:|---:|---:|---:|---:|---:|');
let port = 29800 + Math.floor(Math.random() * 1000);
for (const ranks of [2, 4]) {
  const configs = [
    ['blocking', 'auto'],
    ['blocking', 'tcp'],
    ['async', 'auto'],
  ] as const;
  for (const [path, transport] of configs) {
    for (const r of await run(ranks, transport, path, port++)) {
      const alg = gbs(r.bytes, r.ms);
      console.log(
        `| ${ranks} | ${path === 'blocking' ? 'ProcessGroup (worker)' : 'Collective (async)'} | ${transport === 'auto' ? 'unix socket' : 'tcp loopback'} | ${fmtBytes(r.bytes)} | ${r.ms.toFixed(3)} ms | ${alg.toFixed(3)} | ${((alg * 2 * (ranks - 1)) / ranks).toFixed(3)} | ${r.memcpyMs.toFixed(4)} ms | ${gbs(r.bytes, r.memcpyMs).toFixed(2)} | ${(r.ms / r.memcpyMs).toFixed(0)}x |`,
      );
    }
  }
}
console.log(`\nload average ${loadavg()[0]!.toFixed(1)} at the end. Tokens/s for 1, 2 and 4 training processes: not measured here (needs @rl2/trainers).`);

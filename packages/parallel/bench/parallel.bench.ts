// pnpm bench parallel: all-reduce (sum, float32) on 2 and 4 local processes, 4 KiB to 32 MiB,
// through the blocking ProcessGroup on Gloo (the addon) and on the socket fallback (Unix
// sockets, worker thread), next to torch.distributed's gloo backend (Debian python3-torch,
// bench/torch_allreduce.py) measured in the same run with the same timing loop.
// algbw = bytes / time; busbw = algbw * 2(n-1)/n (what each link carries in a ring, as
// nccl-tests report it). `pnpm bench parallel --all` adds socket TCP and async-Collective rows.
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { loadGlooAddon } from '../src/comm/gloo-addon.js';
import { launch } from '../src/index.js';

interface Row {
  ranks: number;
  bytes: number;
  ms: number;
}

const SIZES = [4 << 10, 64 << 10, 1 << 20, 4 << 20, 32 << 20];
const PY = '/usr/bin/python3';
const fmtBytes = (b: number) => (b >= 2 ** 20 ? `${b / 2 ** 20} MiB` : `${b / 2 ** 10} KiB`);
const gbs = (bytes: number, ms: number) => bytes / (ms / 1000) / 1e9;

async function run(
  ranks: number,
  command: string[],
  env: Record<string, string>,
  port: number,
): Promise<Row[]> {
  const rows: Row[] = [];
  await launch({
    nprocPerNode: ranks,
    masterPort: port,
    output: 'silent',
    env: { BENCH_SIZES: SIZES.map((b) => b / 4).join(','), OMP_NUM_THREADS: '1', ...env },
    command,
    onOutput: (_r, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT '))
        rows.push(JSON.parse(line.slice(7)) as Row);
    },
  });
  return rows;
}

const rankScript = [
  process.execPath,
  '--import',
  'tsx',
  join(import.meta.dirname, 'allreduce-rank.ts'),
];
const configs: { label: string; command: string[]; env: Record<string, string> }[] = [];
const gloo = loadGlooAddon();
if (gloo.ok)
  configs.push({
    label: `rl2 gloo ${gloo.addon.glooVersion}`,
    command: rankScript,
    env: { RL2_COLLECTIVES: 'gloo', BENCH_PATH: 'blocking' },
  });
configs.push({
  label: 'rl2 sockets (unix)',
  command: rankScript,
  env: { RL2_COLLECTIVES: 'sockets', BENCH_PATH: 'blocking', BENCH_TRANSPORT: 'auto' },
});
if (process.argv.includes('--all')) {
  configs.push({
    label: 'rl2 sockets (tcp)',
    command: rankScript,
    env: { RL2_COLLECTIVES: 'sockets', BENCH_PATH: 'blocking', BENCH_TRANSPORT: 'tcp' },
  });
  configs.push({
    label: 'rl2 sockets async Collective',
    command: rankScript,
    env: { BENCH_PATH: 'async', BENCH_TRANSPORT: 'auto' },
  });
}
const torchOk =
  spawnSync(PY, ['-c', 'import torch.distributed as d; assert d.is_gloo_available()']).status === 0;
if (torchOk)
  configs.push({
    label: 'torch.distributed gloo',
    command: [PY, join(import.meta.dirname, 'torch_allreduce.py')],
    env: {},
  });

console.log(
  `all-reduce (sum, float32), blocking calls, on ${cpus().length} CPU cores, Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} at start`,
);
if (!gloo.ok) console.log(`(no gloo rows: ${gloo.reason})`);
if (!torchOk)
  console.log(
    `(no torch rows: ${PY} with torch.distributed gloo not found; Debian: apt install python3-torch)`,
  );
console.log(
  '\n| ranks | size | collectives | all-reduce | algbw GB/s | busbw GB/s | time / torch gloo | busbw / torch gloo |',
);
console.log('|---:|---:|---|---:|---:|---:|---:|---:|');
let port = 29800 + Math.floor(Math.random() * 1000);
for (const ranks of [2, 4]) {
  const results = new Map<string, Row[]>();
  for (const c of configs) results.set(c.label, await run(ranks, c.command, c.env, port++));
  const torch = results.get('torch.distributed gloo');
  for (const bytes of SIZES) {
    const ref = torch?.find((r) => r.bytes === bytes);
    for (const c of configs) {
      const r = results.get(c.label)!.find((x) => x.bytes === bytes);
      if (!r) continue;
      const alg = gbs(r.bytes, r.ms);
      const ratio = ref
        ? `${(r.ms / ref.ms).toFixed(2)}x | ${(ref.ms / r.ms).toFixed(2)}x`
        : '- | -';
      console.log(
        `| ${ranks} | ${fmtBytes(bytes)} | ${c.label} | ${r.ms.toFixed(3)} ms | ${alg.toFixed(3)} | ${((alg * 2 * (ranks - 1)) / ranks).toFixed(3)} | ${ratio} |`,
      );
    }
  }
}
console.log(`\nload average ${loadavg()[0]!.toFixed(1)} at the end.`);

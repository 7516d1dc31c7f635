// pnpm bench parallel: all-reduce (sum, float32) on 2 and 4 local processes, 4 KiB to 32 MiB,
// through the blocking ProcessGroup on Gloo (the addon) and on the socket fallback (Unix
// sockets, worker thread), next to torch.distributed's gloo backend (Debian python3-torch,
// bench/torch_allreduce.py) measured in the same run with the same timing loop.
// algbw = bytes / time; busbw = algbw * 2(n-1)/n (what each link carries in a ring, as
// nccl-tests report it). `pnpm bench parallel --all` adds socket TCP and async-Collective rows.
// On a shared machine one pass moves by up to 1.5x with the load, torch's rows as much as ours,
// so Gloo and torch run ROUNDS times, alternating (Gloo first in odd rounds, torch first in
// even ones): a row shows the median time, its range, and the median over rounds of the time
// ratio to torch's run next to it. The socket rows, 5-20x slower, run once.
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
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Timed calls per size: as many as fit in this (5 to 200), as in allreduce-rank.ts. */
const BUDGET_MS = 500;
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
    env: {
      BENCH_SIZES: SIZES.map((b) => b / 4).join(','),
      BENCH_BUDGET_MS: String(BUDGET_MS),
      OMP_NUM_THREADS: '1',
      ...env,
    },
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
interface Config {
  label: string;
  command: string[];
  env: Record<string, string>;
  /** Run every round (Gloo, torch) or once (the socket rows). */
  rounds: number;
}
const configs: Config[] = [];
const gloo = loadGlooAddon();
if (gloo.ok)
  configs.push({
    label: `rl2 gloo ${gloo.addon.glooVersion}`,
    command: rankScript,
    env: { RL2_COLLECTIVES: 'gloo', BENCH_PATH: 'blocking' },
    rounds: ROUNDS,
  });
configs.push({
  label: 'rl2 sockets (unix)',
  command: rankScript,
  env: { RL2_COLLECTIVES: 'sockets', BENCH_PATH: 'blocking', BENCH_TRANSPORT: 'auto' },
  rounds: 1,
});
if (process.argv.includes('--all')) {
  configs.push({
    label: 'rl2 sockets (tcp)',
    command: rankScript,
    env: { RL2_COLLECTIVES: 'sockets', BENCH_PATH: 'blocking', BENCH_TRANSPORT: 'tcp' },
    rounds: 1,
  });
  configs.push({
    label: 'rl2 sockets async Collective',
    command: rankScript,
    env: { BENCH_PATH: 'async', BENCH_TRANSPORT: 'auto' },
    rounds: 1,
  });
}
const torchOk =
  spawnSync(PY, ['-c', 'import torch.distributed as d; assert d.is_gloo_available()']).status === 0;
if (torchOk)
  configs.push({
    label: 'torch.distributed gloo',
    command: [PY, join(import.meta.dirname, 'torch_allreduce.py')],
    env: {},
    rounds: ROUNDS,
  });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const fmtMs = (ms: number) => (ms >= 10 ? ms.toFixed(1) : ms.toFixed(3));

console.log(
  `all-reduce (sum, float32), blocking calls, on ${cpus().length} CPU cores, ` +
    `Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} at start; Gloo and ` +
    `torch ${ROUNDS} rounds each, alternating`,
);
if (!gloo.ok) console.log(`(no gloo rows: ${gloo.reason})`);
if (!torchOk)
  console.log(
    `(no torch rows: ${PY} with torch.distributed gloo not found; Debian: apt install python3-torch)`,
  );
console.log(
  '\n| ranks | size | collectives | all-reduce (median) | range | busbw GB/s | time / torch gloo | busbw / torch gloo |',
);
console.log('|---:|---:|---|---:|---:|---:|---:|---:|');
let port = 29800 + Math.floor(Math.random() * 1000);
for (const ranks of [2, 4]) {
  // results[label][round] = rows of that run
  const results = new Map<string, Row[][]>(configs.map((c) => [c.label, []]));
  for (let round = 0; round < ROUNDS; round++) {
    const due = configs.filter((c) => round < c.rounds);
    if (round % 2 === 1) due.reverse();
    for (const c of due) results.get(c.label)!.push(await run(ranks, c.command, c.env, port++));
  }
  const torch = results.get('torch.distributed gloo');
  const msOf = (runs: Row[][], bytes: number) =>
    runs.map((rows) => rows.find((r) => r.bytes === bytes)?.ms).filter((ms) => ms !== undefined);
  for (const bytes of SIZES) {
    const torchMs = torch ? msOf(torch, bytes) : [];
    for (const c of configs) {
      const runs = results.get(c.label)!;
      const ms = msOf(runs, bytes);
      if (!ms.length) continue;
      const t = median(ms);
      const bus = (gbs(bytes, t) * 2 * (ranks - 1)) / ranks;
      // paired with torch's run of the same round; a once-run row against torch's median
      const ratios = torchMs.length
        ? ms.length === torchMs.length
          ? ms.map((m, i) => m / torchMs[i]!)
          : [t / median(torchMs)]
        : [];
      const ratio = ratios.length
        ? `${median(ratios).toFixed(2)}x | ${(1 / median(ratios)).toFixed(2)}x`
        : '- | -';
      const range =
        ms.length > 1 ? `${fmtMs(Math.min(...ms))}-${fmtMs(Math.max(...ms))} ms` : '(1 run)';
      console.log(
        `| ${ranks} | ${fmtBytes(bytes)} | ${c.label} | ${fmtMs(t)} ms | ${range} | ${bus.toFixed(3)} | ${ratio} |`,
      );
    }
  }
}
console.log(`\nload average ${loadavg()[0]!.toFixed(1)} at the end.`);

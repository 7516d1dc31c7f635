// pnpm bench sft-parallel: tokens/s of the tiny addition SFT (examples/addition/sft.yaml on a
// random Qwen3, hidden 64, 2 layers, as `rl2 init-model` writes it) on 1, 2 and 4 data-parallel
// processes of one node (plain data parallel, FSDP, tensor and context parallel), started with
// launch() as `rl2 launch --nproc-per-node N` does. The embedding is padded to 100 rows so
// that tp = 2 divides the vocabulary.
// tokens/s = the step's tokens over all ranks / the step's wall time (gradient all-reduce
// included), median over steps 2..N; losses must agree across the runs (same global batch).
// The collectives are the default (Gloo when its addon is built); `RL2_COLLECTIVES=sockets pnpm
// bench sft-parallel` times the socket fallback.
import { mkdtempSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { launch } from '@rl2/parallel';
import { writeRandomCheckpoint } from '../src/model-init/random-checkpoint.js';

const STEPS = Number(process.argv[2] ?? 8);
const dir = mkdtempSync(join(tmpdir(), 'rl2-bench-dp-'));
writeRandomCheckpoint({
  arch: 'qwen3',
  tokenizerDir: resolve(import.meta.dirname, '../../../examples/addition/tokenizer'),
  outDir: join(dir, 'model'),
  vocabSize: 100,
});

interface RankResult {
  rank: number;
  engine: string;
  steps: { tokensPerSecond: number; loss: number }[];
  tensorBytes: number;
}

async function run(
  n: number,
  port: number,
  label: string,
  overrides: string[],
): Promise<{ rank0: RankResult; wallS: number; collectives: string }> {
  const results: RankResult[] = [];
  let collectives = n === 1 ? '-' : '?';
  const began = performance.now();
  await launch({
    nprocPerNode: n,
    masterPort: port,
    output: 'silent',
    env: {
      BENCH_DIR: dir,
      BENCH_STEPS: String(STEPS),
      BENCH_OVERRIDES: JSON.stringify(overrides),
      BENCH_LAYOUT: label.replace(/\W+/g, '-'),
    },
    command: [
      process.execPath,
      '--import',
      'tsx',
      '--import',
      resolve(import.meta.dirname, '../test/ranks/register-source.mjs'),
      join(import.meta.dirname, 'sft-parallel-rank.ts'),
    ],
    onOutput: (_r, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT '))
        results.push(JSON.parse(line.slice(7)) as RankResult);
      // initProcessGroup's one line on local rank 0: `rl2 parallel: collectives on gloo 0.5.0 (tcp), ...`
      const m =
        stream === 'stdout'
          ? /rl2 parallel: collectives on (gloo [\d.]+|sockets)/.exec(line)
          : null;
      if (m) collectives = m[1]!;
    },
  });
  const rank0 = results.find((r) => r.rank === 0);
  if (!rank0) throw new Error(`no result from rank 0 of ${n}`);
  return { rank0, wallS: (performance.now() - began) / 1000, collectives };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(
  `tiny SFT (examples/addition/sft.yaml, batch 32, ${STEPS} steps) on ${availableParallelism()} ` +
    `cores, Node ${process.version}, load average ${loadavg()[0]?.toFixed(1)} at start\n`,
);
console.log(
  '| processes | layout | collectives | engine (per process) | tokens/s (median, steps 2..N) | ' +
    'vs 1 process | run wall time | loss at last step | tensor KiB rank 0 holds between steps |',
);
console.log('|---:|---|---|---|---:|---:|---:|---:|---:|');
let base = 0;
let port = 29700 + Math.floor(Math.random() * 90);
const runs: [number, string, string[]][] = [
  [1, 'one process', []],
  [2, 'data parallel', []],
  [2, 'FSDP (actor.ddp_size=1)', ['actor.ddp_size=1']],
  [4, 'data parallel', []],
  [4, 'FSDP (actor.ddp_size=1)', ['actor.ddp_size=1']],
  [2, 'TP(2) (actor.tp_size=2)', ['actor.tp_size=2']],
  [2, 'CP(2) (actor.cp_size=2)', ['actor.cp_size=2']],
  [4, 'TP(2) x CP(2)', ['actor.tp_size=2', 'actor.cp_size=2']],
  [4, 'TP(2) x DP(2)', ['actor.tp_size=2']],
];
for (const [n, layout, overrides] of runs) {
  const { rank0, wallS, collectives } = await run(n, port++, layout, overrides);
  const tps = median(rank0.steps.slice(1).map((s) => s.tokensPerSecond));
  if (n === 1) base = tps;
  console.log(
    `| ${n} | ${layout} | ${collectives} | ${rank0.engine} | ${tps.toFixed(0)} ` +
      `| ${(tps / base).toFixed(2)}x | ${wallS.toFixed(1)} s ` +
      `| ${rank0.steps.at(-1)?.loss.toFixed(4)} | ${(rank0.tensorBytes / 1024).toFixed(0)} |`,
  );
}
console.log(`\nload average ${loadavg()[0]?.toFixed(1)} at the end.`);

// pnpm bench ppo-memory: tensor memory each rank holds during `rl2 ppo` (GRPO, embedded engine,
// 2 steps on a random Qwen3 of hidden 128, 1 layer, 4 query / 2 kv heads, the tinyRun digits
// env) on 1 process, 2 data-parallel processes and actor TP(2): with actor.tp_size=2 the tp group
// generates with its shards (tensor-parallel generation), so no rank holds a full actor.
// Tensor memory = tf.memory().numBytes at the end of each step, the most over steps and ranks.
// Ranks are started with launch() as `rl2 launch --nproc-per-node N` does.
import { join } from 'node:path';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { launch } from '@rl2/parallel';
import { tinyRun } from '../test/ppo-fixtures/tiny-run.js';

const t = tinyRun('bench-memory', { hiddenSize: 128, heads: 4, kvHeads: 2, vocabSize: 34 });
const base = [
  ...t.overrides(),
  'rollout.train_prompts_per_rollout=4',
  'rollout.responses_per_prompt=4',
  'rollout.train_sampling_params.max_new_tokens=8',
  'rollout.save_rollouts=false',
  'actor.max_length_per_device=48',
  'trainer.max_steps=2',
  'trainer.test_freq=null',
  'trainer.save_freq=null',
  'trainer.progress=none',
  'trainer.threads=1',
  'trainer.use_tensorboard=false',
  'trainer.report=false',
];

async function run(
  n: number,
  port: number,
  extra: string[],
): Promise<{ perRank: number[]; wallS: number }> {
  const results: { rank: number; tensorBytes: number }[] = [];
  const errors: string[] = [];
  const began = performance.now();
  await launch({
    nprocPerNode: n,
    masterPort: port,
    output: 'silent',
    env: {
      PPO_OVERRIDES: JSON.stringify([
        ...base,
        `trainer.save_dir=${join(t.dir, `run-${port}`)}`,
        ...extra,
      ]),
    },
    command: [
      process.execPath,
      '--import',
      'tsx',
      '--import',
      join(import.meta.dirname, '../test/ranks/register-source.mjs'),
      join(import.meta.dirname, '../test/ranks/ppo.rank.ts'),
    ],
    onOutput: (_r, stream, line) => {
      if (stream === 'stdout' && line.startsWith('RESULT '))
        results.push(JSON.parse(line.slice(7)));
      else if (stream === 'stderr') errors.push(line);
    },
  }).catch((e: Error) => {
    throw new Error(`${e.message}\n${errors.join('\n')}`);
  });
  return {
    perRank: results.sort((a, b) => a.rank - b.rank).map((r) => r.tensorBytes),
    wallS: (performance.now() - began) / 1000,
  };
}

console.log(
  `rl2 ppo tensor memory per rank (${availableParallelism()} cores, ${cpus()[0]?.model ?? '?'}, ` +
    `Node ${process.version}, load average ${loadavg()[0]?.toFixed(1)} at start)\n`,
);
console.log(
  '| processes | layout | tensor KiB per rank (max over steps) | vs 1 process | run wall time |',
);
console.log('|---:|---|---|---:|---:|');
let port = 29800 + Math.floor(Math.random() * 90);
let one = 0;
for (const [n, label, extra] of [
  [1, 'one process', []],
  [2, 'data parallel', []],
  [2, 'actor TP(2), generation on the shards', ['actor.tp_size=2']],
] as const) {
  const { perRank, wallS } = await run(n, port++, [...extra]);
  const kib = perRank.map((b) => (b / 1024).toFixed(0));
  if (n === 1) one = perRank[0] as number;
  console.log(
    `| ${n} | ${label} | ${kib.join(' / ')} | ${(Math.max(...perRank) / one).toFixed(2)} | ${wallS.toFixed(1)} s |`,
  );
}

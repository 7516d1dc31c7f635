/**
 * `pnpm bench rl-demo`: the main job's RL demo (examples/rl-demo, what `pnpm main` runs) for
 * seeds 0, 1, 2 and RL2_THREADS=1 and 2, end to end each time (init-model, `rl2 sft`,
 * `rl2 ppo`), and a before/after table of the greedy test reward. Needs a build
 * (apps/cli/dist). Options: --seeds=0,1,2 --threads=1,2, and `sft.KEY=VALUE` / `ppo.KEY=VALUE`
 * overrides for the two stages. Runs go to runs/bench-rl-demo/seed-S-threads-T.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..', '..');
const cli = join(root, 'apps', 'cli', 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error('rl-demo: apps/cli/dist/cli.js is missing; run `pnpm build` first');
  process.exit(1);
}
const args = process.argv.slice(2);
const list = (name: string, fallback: number[]) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  return a
    ? a
        .slice(name.length + 3)
        .split(',')
        .map(Number)
    : fallback;
};
const seeds = list('seeds', [0, 1, 2]);
const threadCounts = list('threads', [1, 2]);
const overrides = (stage: string) =>
  args.filter((x) => x.startsWith(`${stage}.`)).map((x) => x.slice(stage.length + 1));

// Each rl2 process writes its own CPU time (user + system, all threads) here when it exits:
// on a shared machine the wall time depends on the load, the CPU time much less.
const cpuDir = mkdtempSync(join(tmpdir(), 'rl2-rl-demo-'));
const cpuHook =
  "data:text/javascript,import{writeFileSync}from'node:fs';" +
  "process.on('exit',()=>{const u=process.cpuUsage();" +
  'writeFileSync(process.env.RL2_BENCH_CPU_FILE,String((u.user+u.system)/1e6))})';
let calls = 0;

/** Runs one rl2 command; returns [wall seconds, CPU seconds]. */
function rl2(argv: string[], threads: number): [number, number] {
  const cpuFile = join(cpuDir, `${calls++}`);
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--import', cpuHook, cli, ...argv], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, RL2_THREADS: String(threads), RL2_BENCH_CPU_FILE: cpuFile },
  });
  if (r.status !== 0) throw new Error(`rl2 ${argv.join(' ')} failed with exit code ${r.status}`);
  return [(performance.now() - t0) / 1000, Number(readFileSync(cpuFile, 'utf8'))];
}
const add = (a: [number, number], b: [number, number]): [number, number] => [
  a[0] + b[0],
  a[1] + b[1],
];

interface Row {
  seed: number;
  threads: number;
  curve: number[];
  seconds: number;
  cpu: number;
}
const rows: Row[] = [];
for (const seed of seeds) {
  for (const threads of threadCounts) {
    const dir = join('runs', 'bench-rl-demo', `seed-${seed}-threads-${threads}`);
    const model = join(dir, 'tiny-qwen3');
    let time = rl2(
      [
        'init-model',
        '--arch',
        'qwen3',
        '--tokenizer',
        'examples/addition/tokenizer',
        '--out',
        model,
        '--hidden-size',
        '64',
        '--layers',
        '2',
        '--heads',
        '4',
        '--seed',
        String(seed),
      ],
      threads,
    );
    const common = [
      `trainer.seed=${seed}`,
      'trainer.progress=none',
      'trainer.use_tensorboard=false',
      'trainer.report=false',
    ];
    time = add(
      time,
      rl2(
        [
          'sft',
          '--config',
          'examples/rl-demo/sft.yaml',
          `actor.model_name=${model}`,
          `trainer.save_dir=${dir}/sft`,
          ...common,
          ...overrides('sft'),
        ],
        threads,
      ),
    );
    time = add(
      time,
      rl2(
        [
          'ppo',
          '--config',
          'examples/rl-demo/grpo.yaml',
          `actor.model_name=${dir}/sft/latest/model`,
          `trainer.save_dir=${dir}/grpo`,
          'rollout.save_rollouts=false',
          ...common,
          ...overrides('ppo'),
        ],
        threads,
      ),
    );
    const curve = readFileSync(join(root, dir, 'grpo', 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.includes('"test/reward/mean"'))
      .map((line) => (JSON.parse(line) as Record<string, number>)['test/reward/mean'] as number);
    const [seconds, cpu] = time;
    rows.push({ seed, threads, curve, seconds, cpu });
    console.log(
      `seed ${seed}, RL2_THREADS=${threads}: test ` +
        `reward ${curve.map((v) => v.toFixed(3)).join(' -> ')} (${seconds.toFixed(0)} s, ` +
        `CPU ${cpu.toFixed(0)} s)`,
    );
  }
}

const ok = (r: Row) => {
  const [first, last] = [r.curve[0] as number, r.curve[r.curve.length - 1] as number];
  return last - first >= 0.25 || last >= 2 * first;
};
rmSync(cpuDir, { recursive: true, force: true });
const [load] = loadavg();
console.log(
  `\nrl-demo, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, ${cpus().length} ` +
    `cores, ${cpus()[0]?.model.trim()}, load average ${(load ?? 0).toFixed(1)} at the end`,
);
console.log(
  '\n| seed | RL2_THREADS | greedy test reward after SFT | after GRPO | change | wall time (init + SFT + GRPO) | CPU time |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const [first, last] = [r.curve[0] as number, r.curve[r.curve.length - 1] as number];
  console.log(
    `| ${r.seed} | ${r.threads} | ${first.toFixed(3)} | **${last.toFixed(3)}** ` +
      `| ${last - first >= 0 ? '+' : ''}${(last - first).toFixed(3)} | ${r.seconds.toFixed(0)} ` +
      `s | ${r.cpu.toFixed(0)} s |`,
  );
}
const passed = rows.filter(ok).length;
console.log(
  `\n${passed}/${rows.length} runs raise the greedy test reward by >= 0.25 or to >= 2x its start`,
);
process.exit(passed === rows.length ? 0 : 1);

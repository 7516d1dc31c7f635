/**
 * `pnpm bench lora-demo`: the RL demo (examples/rl-demo, the main job's task) trained as LoRA
 * adapters next to full fine-tuning, from the same base, for seeds 0, 1, 2. Per seed: a tiny
 * Qwen3 (`init-model --seed`), the stand-in for a pretrained base (`rl2 sft` of pretrain.yaml:
 * full training on the addition example's data), then from that base full SFT -> full GRPO
 * (sft.yaml, grpo.yaml) and LoRA SFT -> LoRA GRPO (sft-lora.yaml, grpo-lora.yaml: the GRPO actor
 * is the LoRA SFT checkpoint's merged model/ with a new adapter). Both GRPO runs take
 * grpo-lora.yaml's length (`trainer.n_epochs`, `trainer.max_steps`): the same budget for each arm.
 * Prints the greedy test reward after SFT and after GRPO per seed, the means and the gap (goal:
 * LoRA within 0.05 of full).
 * Needs a build (apps/cli/dist). Options: --seeds=0,1,2 --threads=1, `full.sft.KEY=VALUE`,
 * `lora.ppo.KEY=VALUE` (etc.) overrides, --reuse-full (read the full arm's rewards from an
 * earlier run's folders: rerun only the base and the LoRA arm). Runs go to
 * runs/bench-lora-demo/seed-S.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

const root = resolve(import.meta.dirname, '..', '..', '..');
const cli = join(root, 'apps', 'cli', 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error('lora-demo: apps/cli/dist/cli.js is missing; run `pnpm build` first');
  process.exit(1);
}
const args = process.argv.slice(2);
const opt = (name: string) => args.find((x) => x.startsWith(`--${name}=`))?.slice(name.length + 3);
const seeds = (opt('seeds') ?? '0,1,2').split(',').map(Number);
const threads = opt('threads') ?? '1';
const reuseFull = args.includes('--reuse-full');
const overrides = (prefix: string) =>
  args.filter((x) => x.startsWith(`${prefix}.`)).map((x) => x.slice(prefix.length + 1));

// each rl2 process writes its CPU time (user + system) here when it exits: on a shared
// machine the wall time depends on the load, the CPU time much less
const cpuDir = mkdtempSync(join(tmpdir(), 'rl2-lora-demo-'));
const cpuHook =
  "data:text/javascript,import{writeFileSync}from'node:fs';" +
  "process.on('exit',()=>{const u=process.cpuUsage();" +
  'writeFileSync(process.env.RL2_BENCH_CPU_FILE,String((u.user+u.system)/1e6))})';
let calls = 0;

/** Runs one rl2 command; returns its CPU seconds. */
function rl2(argv: string[]): number {
  const cpuFile = join(cpuDir, `${calls++}`);
  const r = spawnSync(process.execPath, ['--import', cpuHook, cli, ...argv], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, RL2_THREADS: threads, RL2_BENCH_CPU_FILE: cpuFile },
  });
  if (r.status !== 0) throw new Error(`rl2 ${argv.join(' ')} failed with exit code ${r.status}`);
  return Number(readFileSync(cpuFile, 'utf8'));
}

const quiet = ['trainer.progress=none', 'trainer.use_tensorboard=false', 'trainer.report=false'];

/** grpo-lora.yaml's run length as overrides: full GRPO runs as many steps as LoRA GRPO. */
function loraRunLength(): string[] {
  const yaml = readFileSync(join(root, 'examples', 'rl-demo', 'grpo-lora.yaml'), 'utf8');
  const { n_epochs, max_steps } = (parse(yaml) as { trainer: Record<string, unknown> }).trainer;
  return [`trainer.n_epochs=${n_epochs ?? 1}`, `trainer.max_steps=${max_steps ?? 'null'}`];
}

/** One arm from `base`: SFT then GRPO; the greedy test rewards after SFT and after GRPO, wall and CPU seconds. */
function arm(name: 'full' | 'lora', seed: number, dir: string, base: string) {
  const [sft, grpo] = name === 'full' ? ['sft', 'grpo'] : ['sft-lora', 'grpo-lora'];
  const save = join(dir, name);
  const common = [`trainer.seed=${seed}`, ...quiet];
  const t0 = performance.now();
  let cpu = rl2([
    'sft',
    '--config',
    `examples/rl-demo/${sft}.yaml`,
    `actor.model_name=${base}`,
    `trainer.save_dir=${save}/sft`,
    ...common,
    ...overrides(`${name}.sft`),
  ]);
  cpu += rl2([
    'ppo',
    '--config',
    `examples/rl-demo/${grpo}.yaml`,
    `actor.model_name=${save}/sft/latest/model`,
    `trainer.save_dir=${save}/grpo`,
    'rollout.save_rollouts=false',
    ...common,
    ...(name === 'full' ? loraRunLength() : []),
    ...overrides(`${name}.ppo`),
  ]);
  const curve = testCurve(save);
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `seed ${seed} ${name}: test reward ${curve.map((v) => v.toFixed(3)).join(' -> ')} ` +
      `(${seconds.toFixed(0)} s, CPU ${cpu.toFixed(0)} s)`,
  );
  return { sft: curve[0] as number, grpo: curve[curve.length - 1] as number, seconds, cpu };
}

/** The greedy test rewards of the GRPO run under `save`, step 0 (after SFT) first. */
function testCurve(save: string): number[] {
  return readFileSync(join(root, save, 'grpo', 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.includes('"test/reward/mean"'))
    .map((line) => (JSON.parse(line) as Record<string, number>)['test/reward/mean'] as number);
}

/** The full arm of an earlier run (--reuse-full): its rewards, no times. */
function reusedFull(seed: number, dir: string) {
  const curve = testCurve(join(dir, 'full'));
  console.log(
    `seed ${seed} full (reused): test reward ${curve.map((v) => v.toFixed(3)).join(' -> ')}`,
  );
  return {
    sft: curve[0] as number,
    grpo: curve[curve.length - 1] as number,
    seconds: NaN,
    cpu: NaN,
  };
}

type Arm = ReturnType<typeof arm>;
const rows: Array<{ seed: number; full: Arm; lora: Arm }> = [];
const began = new Date();
const startLoad = loadavg()[0] as number;
for (const seed of seeds) {
  const dir = join('runs', 'bench-lora-demo', `seed-${seed}`);
  const model = join(dir, 'tiny-qwen3');
  rl2([
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
  ]);
  rl2([
    'sft',
    '--config',
    'examples/rl-demo/pretrain.yaml',
    `actor.model_name=${model}`,
    `trainer.save_dir=${dir}/pretrain`,
    `trainer.seed=${seed}`,
    ...quiet,
  ]);
  const base = `${dir}/pretrain/latest/model`;
  const full = reuseFull ? reusedFull(seed, dir) : arm('full', seed, dir, base);
  rows.push({ seed, full, lora: arm('lora', seed, dir, base) });
}
rmSync(cpuDir, { recursive: true, force: true });

const f3 = (v: number) => v.toFixed(3);
const mean = (vs: number[]) => vs.reduce((a, b) => a + b, 0) / vs.length;
const stamp = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
console.log(
  `\nlora-demo, ${stamp(began)}-${stamp(new Date()).slice(11)} UTC, ${cpus().length} cores, ` +
    `${cpus()[0]?.model.trim()}, RL2_THREADS=${threads}, load average ${startLoad.toFixed(1)} ` +
    `at the start and ${(loadavg()[0] as number).toFixed(1)} at the end`,
);
console.log(
  '\n| seed | full: after SFT | full: after GRPO | LoRA: after SFT | LoRA: after GRPO | LoRA - full ' +
    '(after GRPO) | full: wall / CPU | LoRA: wall / CPU |',
);
console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
const time = (a: Arm) =>
  Number.isNaN(a.seconds) ? 'reused' : `${a.seconds.toFixed(0)} s / ${a.cpu.toFixed(0)} s`;
for (const { seed, full, lora } of rows)
  console.log(
    `| ${seed} | ${f3(full.sft)} | ${f3(full.grpo)} | ${f3(lora.sft)} | ${f3(lora.grpo)} | ` +
      `${lora.grpo - full.grpo >= 0 ? '+' : ''}${f3(lora.grpo - full.grpo)} | ${time(full)} | ${time(lora)} |`,
  );
const m = (pick: (r: (typeof rows)[number]) => number) => mean(rows.map(pick));
const gap = m((r) => r.lora.grpo) - m((r) => r.full.grpo);
console.log(
  `| mean | ${f3(m((r) => r.full.sft))} | **${f3(m((r) => r.full.grpo))}** | ${f3(m((r) => r.lora.sft))} ` +
    `| **${f3(m((r) => r.lora.grpo))}** | **${gap >= 0 ? '+' : ''}${f3(gap)}** | | |`,
);
const ok = gap >= -0.05;
console.log(
  `\nLoRA's mean greedy test reward after GRPO is ${ok ? 'within' : 'more than'} 0.05 of full fine-tuning's ` +
    `(${gap >= 0 ? '+' : ''}${f3(gap)})`,
);
process.exit(ok ? 0 : 1);

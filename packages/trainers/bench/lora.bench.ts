// `pnpm bench lora [--steps N] [--rows R] [--words W] [--rank R] [--layers L] [--tiny] [--shape qwen2.5-3b]
// [--torch-compute fp32|autocast] [--dir DIR]`:
// full fine-tuning vs LoRA SFT (`actor.lora.rank`, all seven projections) on the same checkpoint at
// the Qwen3-0.6B shape (hidden 1024, 28 layers, 16 heads / 8 kv heads of 128, MLP 3072, the Qwen3
// tokenizer's 151669 rows, tied embeddings, bf16 weights on disk, float32 in memory), the same
// rows and steps, each `rl2 sft` in its own process: train tokens/s (from metrics.jsonl), the
// process's CPU seconds and its peak RSS (GNU time's %M). Needs `pnpm build` (it runs the CLI).
// Next to it PyTorch 1.13 on the same token ids, full and LoRA (scripts/bench_lora_torch.py: the
// same rank, alpha and modules). The machine's load average (uptime) is printed with the
// table: rates on a shared machine swing with the load, the RSS columns do not. --layers 4 keeps
// the real widths with fewer layers, --tiny (hidden 64, 2 layers) checks the plumbing.
// --shape qwen2.5-3b: the Qwen2.5-3B shape (Qwen2 with q/k/v biases, hidden 2048, 36 layers, 16
// heads / 2 kv heads of 128, MLP 11008, vocab 151936, tied, bf16 on disk: ~6.2 GB written here
// and deleted after) with LoRA only (full fine-tuning does not fit): rl2 keeps the base in
// bfloat16 (actor.lora.base_dtype=bfloat16), PyTorch too (--base-dtype bfloat16: each weight
// widened to float32 where it is used, or --torch-compute autocast for bf16 autocast).
// --tp N: LoRA SFT with the base kept in bfloat16 on one process and under `rl2 launch` with
// actor.tp_size=N (N processes, each its shard of the base and adapters): tokens/s, the largest
// process's peak RSS and how far the tp run's per-step loss and grad norm are from the one process's.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { loadTokenizer } from '@rl2/data';
import { loadItems } from '../src/dataset/load-items.js';
import { loadConfig, sftConfigSchema } from '../src/index.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const CLI = join(ROOT, 'apps', 'cli', 'dist', 'cli.js');
const TORCH = join(ROOT, 'packages', 'trainers', 'scripts', 'bench_lora_torch.py');
const args = process.argv.slice(2);
const flag = (name: string, fallback: number) =>
  args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback;
const STEPS = flag('--steps', 3);
const ROWS = flag('--rows', 2);
const WORDS = flag('--words', 100);
const RANK = flag('--rank', 16);
const option = (name: string, fallback: string) =>
  args.includes(name) ? String(args[args.indexOf(name) + 1]) : fallback;
const BIG = option('--shape', 'qwen3-0.6b') === 'qwen2.5-3b';
const TORCH_COMPUTE = option('--torch-compute', 'fp32');
const TP = flag('--tp', 1);
// under tp the embedding rows must divide by it: Qwen3-0.6B's own padded 151936 (the tokenizer has 151669)
const TP_VOCAB = TP > 1 && !args.includes('--shape') ? ['--vocab-size', '151936'] : [];
const QWEN25_3B = [
  '--arch',
  'qwen2',
  '--hidden-size',
  '2048',
  '--layers',
  String(flag('--layers', 36)),
].concat([
  '--heads',
  '16',
  '--kv-heads',
  '2',
  '--head-dim',
  '128',
  '--intermediate-size',
  '11008',
  '--vocab-size',
  '151936',
]);
const SHAPE = args.includes('--tiny')
  ? ['--hidden-size', '64', '--layers', '2', '--heads', '4', '--kv-heads', '2', '--head-dim', '16']
  : BIG
    ? QWEN25_3B
    : [
        '--hidden-size',
        '1024',
        '--layers',
        String(flag('--layers', 28)),
        '--heads',
        '16',
        '--kv-heads',
        '8',
      ].concat(['--head-dim', '128', '--intermediate-size', '3072']);
const dir = args.includes('--dir')
  ? resolve(args[args.indexOf('--dir') + 1]!)
  : mkdtempSync(join(tmpdir(), 'rl2-bench-lora-'));
mkdirSync(dir, { recursive: true });
const MODEL = join(dir, 'model');

interface Run {
  seconds: number;
  cpuSeconds: number;
  peakMiB: number;
}

/** `cmd ...argv` to the end under GNU time: wall seconds, user + sys CPU seconds, peak RSS. */
function measure(cmd: string, argv: string[]): Run & { stdout: string } {
  const rss = join(dir, 'time.txt');
  const began = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', '-o', rss, cmd, ...argv], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const seconds = (performance.now() - began) / 1000;
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${argv[0]} failed (exit ${r.status}):\n${(r.stderr || r.stdout).split('\n').slice(-15).join('\n')}`,
    );
  const [user, sys, kib] = (readFileSync(rss, 'utf8').trim().split('\n').at(-1) as string)
    .split(' ')
    .map(Number);
  return { seconds, cpuSeconds: user! + sys!, peakMiB: kib! / 1024, stdout: r.stdout };
}

const rl2 = (argv: string[]) => measure(process.execPath, [CLI, ...argv]);
/** PyTorch 1.13 on the same token ids: its tokens/s from its own step timings. */
function torch(extra: string[]): [Run, number] {
  const run = measure('/usr/bin/python3', [
    TORCH,
    MODEL,
    '--data',
    join(dir, 'steps.json'),
    ...extra,
  ]);
  const res = JSON.parse(run.stdout.trim().split('\n').at(-1) as string) as { step_s: number[] };
  return [run, rateOf(res.step_s)];
}

/** Deterministic English-like text (words from a fixed list, an LCG). */
function words(n: number, seed: number): string {
  const list =
    'the of and to in is that for it as was with be by on not he this are or his from at which'.split(
      ' ',
    );
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return list[x % list.length];
  }).join(' ');
}

/** Tokens of each step (every packed token, as both sides count them), set once the data is tokenized. */
let stepTokens: number[] = [];

/** Tokens over seconds of the steps after the first (its lazy allocations left out), from per-step seconds. */
function rateOf(seconds: readonly number[]): number {
  const from = seconds.length > 1 ? 1 : 0;
  const tokens = stepTokens.slice(from, seconds.length).reduce((a, t) => a + t, 0);
  return tokens / seconds.slice(from).reduce((a, t) => a + t, 0);
}

/** rl2's per-step seconds from its metrics.jsonl (train/tokens_per_s of each step and its tokens). */
function trainRate(saveDir: string): number {
  const seconds = readFileSync(join(saveDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
    .filter((m) => m['train/tokens_per_s'] !== undefined)
    .map((m) => (stepTokens[m.step! - 1] as number) / m['train/tokens_per_s']!);
  return rateOf(seconds);
}

const uptime = () => spawnSync('uptime', { encoding: 'utf8' }).stdout.trim();

async function main() {
  const before = uptime();
  console.log(
    `lora bench in ${dir}: ${STEPS} SFT steps of ${ROWS} rows of ~${WORDS} words, LoRA rank ${RANK}; ` +
      `${availableParallelism()} cores (${cpus()[0]?.model}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
  );
  if (!existsSync(join(MODEL, 'config.json')))
    rl2([
      'init-model',
      '--tokenizer',
      'qwen3',
      ...SHAPE,
      ...TP_VOCAB,
      '--dtype',
      'bfloat16',
      '--out',
      MODEL,
    ]);
  const rows = Array.from({ length: ROWS * STEPS }, (_, i) =>
    JSON.stringify({ prompt: words(WORDS / 5, 2 * i + 1), response: words(WORDS, 2 * i + 2) }),
  );
  writeFileSync(join(dir, 'sft.jsonl'), `${rows.join('\n')}\n`);
  const common = [
    `actor.model_name=${MODEL}`,
    `data.train.path=${join(dir, 'sft.jsonl')}`,
    `data.train.batch_size=${ROWS}`,
    'data.test_ratio=0',
    'data.shuffle=false',
    'data.train.apply_chat_template=false',
    `actor.max_length_per_device=${Math.max(1024, 4 * WORDS)}`,
    'trainer.val_before_train=false',
    'trainer.report=false',
    'trainer.use_tensorboard=false',
    'trainer.progress=none',
    'actor.warmup_ratio=0',
    `trainer.max_steps=${STEPS}`,
  ];
  // the very token ids rl2 trains on, step by step, for the PyTorch side
  const cfg = loadConfig(sftConfigSchema, { overrides: common });
  const { train } = await loadItems('sft', await loadTokenizer(MODEL), cfg.data, cfg.trainer.seed);
  const steps = Array.from({ length: STEPS }, (_, s) =>
    train
      .slice(s * ROWS, (s + 1) * ROWS)
      .flatMap((it) => it.sequences.map((q) => ({ ids: [...q.inputIds], mask: [...q.lossMask] }))),
  );
  writeFileSync(join(dir, 'steps.json'), JSON.stringify({ steps }));
  stepTokens = steps.map((q) => q.reduce((a, x) => a + x.ids.length, 0));
  if (TP > 1) return tpRows(common, before);
  if (BIG) return bigRows(common, before);
  const results: [string, Run, number][] = [];
  for (const [name, extra] of [
    ['full fine-tuning', []],
    [
      `LoRA r=${RANK}, all 7 projections`,
      [`actor.lora.rank=${RANK}`, `actor.lora.alpha=${2 * RANK}`],
    ],
  ] as [string, string[]][]) {
    const save = join(dir, name.startsWith('full') ? 'full' : 'lora');
    rmSync(save, { recursive: true, force: true });
    const run = rl2(['sft', ...common, ...extra, `trainer.save_dir=${save}`]);
    results.push([name, run, trainRate(save)]);
  }
  const [full, lora] = results as [[string, Run, number], [string, Run, number]];
  const torchFull = torch([]);
  const torchLora = torch(['--rank', String(RANK), '--alpha', String(2 * RANK)]);
  console.log(
    '\n| rl2 sft | train tokens/s | process wall s / CPU s | peak RSS |\n| --- | --- | --- | --- |',
  );
  for (const [name, run, rate] of results)
    console.log(
      `| ${name} | ${rate.toFixed(1)} | ${run.seconds.toFixed(0)} / ${run.cpuSeconds.toFixed(0)} | ${run.peakMiB.toFixed(0)} MiB |`,
    );
  console.log(
    `| LoRA / full | ${(lora[2] / full[2]).toFixed(2)}x | ${(lora[1].cpuSeconds / full[1].cpuSeconds).toFixed(2)}x CPU s | ` +
      `${(lora[1].peakMiB / full[1].peakMiB).toFixed(2)}x |`,
  );
  console.log(
    '\n| same steps | rl2 tokens/s | PyTorch 1.13 tokens/s | rl2 / PyTorch | rl2 peak RSS | PyTorch peak RSS | rl2 / PyTorch |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const [name, ours, theirs] of [
    ['full fine-tuning', full, torchFull],
    [`LoRA r=${RANK}`, lora, torchLora],
  ] as const)
    console.log(
      `| ${name} | ${ours[2].toFixed(1)} | ${theirs[1].toFixed(1)} | ${(ours[2] / theirs[1]).toFixed(2)}x | ` +
        `${ours[1].peakMiB.toFixed(0)} MiB | ${theirs[0].peakMiB.toFixed(0)} MiB | ${(ours[1].peakMiB / theirs[0].peakMiB).toFixed(2)}x |`,
    );
  console.log(`\nuptime before: ${before}\nuptime after:  ${uptime()}`);
  if (!args.includes('--dir')) rmSync(dir, { recursive: true, force: true });
}

/** Per-step train/loss and train/grad_norm of a run's metrics.jsonl, in one list. */
const stepValues = (saveDir: string) =>
  readFileSync(join(saveDir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number>)
    .flatMap((m) =>
      m['train/loss'] === undefined ? [] : [m['train/loss'], m['train/grad_norm'] as number],
    );

/** --tp N: LoRA SFT on a bfloat16 base, one process, then N processes with actor.tp_size=N. */
function tpRows(common: string[], before: string) {
  const lora = [
    ...common,
    `actor.lora.rank=${RANK}`,
    `actor.lora.alpha=${2 * RANK}`,
    'actor.lora.base_dtype=bfloat16',
    'trainer.save_freq=null',
  ];
  const runs: [string, Run, number, string][] = [];
  for (const tp of [1, TP]) {
    const save = join(dir, `lora-tp${tp}`);
    rmSync(save, { recursive: true, force: true });
    const argv = ['sft', ...lora, `trainer.save_dir=${save}`];
    const run =
      tp === 1
        ? rl2(argv)
        : rl2([
            'launch',
            '--nproc-per-node',
            String(tp),
            '--',
            'rl2',
            ...argv,
            `actor.tp_size=${tp}`,
          ]);
    runs.push([
      tp === 1 ? 'one process' : `rl2 launch, ${tp} processes, actor.tp_size=${tp}`,
      run,
      trainRate(save),
      save,
    ]);
  }
  const [one, many] = runs.map((r) => stepValues(r[3])) as [number[], number[]];
  const worst = Math.max(...one.map((l, i) => Math.abs((many[i] as number) - l) / Math.abs(l)));
  console.log(
    `\n| LoRA r=${RANK}, bf16 base | train tokens/s | process wall s / CPU s (all processes) | ` +
      'peak RSS (largest process) |\n| --- | --- | --- | --- |',
  );
  for (const [name, run, rate] of runs)
    console.log(
      `| ${name} | ${rate.toFixed(1)} | ${run.seconds.toFixed(0)} / ${run.cpuSeconds.toFixed(0)} | ${run.peakMiB.toFixed(0)} MiB |`,
    );
  console.log(
    `\nper-step train loss and grad norm: ${one.length / 2} steps, tp run within ${worst.toExponential(2)} relative of one process`,
  );
  console.log(`\nuptime before: ${before}\nuptime after:  ${uptime()}`);
  if (!args.includes('--dir')) rmSync(dir, { recursive: true, force: true });
}

/** The Qwen2.5-3B rows: LoRA SFT on a bfloat16 base, rl2 then PyTorch on the same steps. */
function bigRows(common: string[], before: string) {
  const save = join(dir, 'lora');
  rmSync(save, { recursive: true, force: true });
  const lora = [
    `actor.lora.rank=${RANK}`,
    `actor.lora.alpha=${2 * RANK}`,
    'actor.lora.base_dtype=bfloat16',
  ];
  const run = rl2([
    'sft',
    ...common,
    ...lora,
    `trainer.save_dir=${save}`,
    'trainer.save_freq=null',
  ]);
  const rate = trainRate(save);
  const rank = ['--rank', String(RANK), '--alpha', String(2 * RANK), '--base-dtype', 'bfloat16'];
  const [theirs, theirRate] = torch([...rank, '--compute', TORCH_COMPUTE]);
  console.log(
    `\n| LoRA r=${RANK}, all 7 projections, bf16 base | train tokens/s | process wall s / CPU s | peak RSS |\n| --- | --- | --- | --- |`,
  );
  for (const [name, r, t] of [
    ['rl2 sft', run, rate],
    [
      `PyTorch 1.13 (bf16 weights, ${TORCH_COMPUTE === 'fp32' ? 'float32 compute' : 'bf16 autocast'})`,
      theirs,
      theirRate,
    ],
  ] as const)
    console.log(
      `| ${name} | ${t.toFixed(1)} | ${r.seconds.toFixed(0)} / ${r.cpuSeconds.toFixed(0)} | ${r.peakMiB.toFixed(0)} MiB |`,
    );
  console.log(
    `| rl2 / PyTorch | ${(rate / theirRate).toFixed(2)}x | | ${(run.peakMiB / theirs.peakMiB).toFixed(2)}x |`,
  );
  console.log(`\nuptime before: ${before}\nuptime after:  ${uptime()}`);
  if (!args.includes('--dir')) rmSync(dir, { recursive: true, force: true });
}

await main();
